import { describe, expect, it } from "vitest";
import { ATTR_CONTROL, encodeBatch, rewriteBatchHeader } from "../../src/codec/index.ts";
import { BATCH_MEDIA_TYPE } from "../../src/protocol/index.ts";
import { EdgelogClient, groupPath, topicPath } from "../../sdk/src/client.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { FakeServer, text, utf8 } from "./sdk-fake-server.ts";

const rec = (v: string, timestamp = 1000) => ({ key: null, value: utf8(v), headers: [], timestamp });

describe("topicPath", () => {
  it("keeps tenant/namespace/name as three segments and percent-encodes each", () => {
    expect(topicPath("orders")).toBe("/v1/topics/orders");
    expect(topicPath("acme/prod/orders")).toBe("/v1/topics/acme/prod/orders");
    expect(topicPath("a b/n?s/t#1")).toBe("/v1/topics/a%20b/n%3Fs/t%231");
  });
});

describe("EdgelogClient requests", () => {
  it("sends JSON with content-type and extra headers, and keeps a base path prefix", async () => {
    const seen: Array<[string, string, string | null, string | null]> = [];
    const client = new EdgelogClient({
      baseUrl: "http://h:1/prefix/",
      headers: { authorization: "Bearer k" },
      fetch: async (input, init) => {
        const h = new Headers(init?.headers);
        seen.push([String(input), init?.method ?? "", h.get("content-type"), h.get("authorization")]);
        return new Response(JSON.stringify({ name: "public/default/t", partitions: 2 }), { status: 201 });
      },
    });
    const d = await client.createTopic({ name: "t", partitions: 2, configs: { "retention.ms": "1000" } });
    expect(d.partitions).toBe(2);
    expect(seen).toEqual([["http://h:1/prefix/v1/topics", "POST", "application/json", "Bearer k"]]);
  });

  it("listOffsets builds spec and timestamp queries", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1);
    server.append("t", 0, [rec("a", 100), rec("b", 200), rec("c", 300)]);
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
    expect((await client.listOffsets("t", 0, "earliest")).offset).toBe(0);
    expect((await client.listOffsets("t", 0, "latest")).offset).toBe(3);
    expect((await client.listOffsets("t", 0, { timestamp: 150 })).offset).toBe(1);
    expect((await client.listOffsets("t", 0, { timestamp: 301 })).offset).toBe(null);
    expect(server.requests.map((r) => r.query.toString())).toEqual(["spec=earliest", "spec=latest", "spec=timestamp&timestamp=150", "spec=timestamp&timestamp=301"]);
  });

  it("initProducerId posts to /v1/producers", async () => {
    const server = new FakeServer();
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
    expect(await client.initProducerId()).toEqual({ producerId: 1000, producerEpoch: 0 });
    expect(await client.initProducerId()).toEqual({ producerId: 1001, producerEpoch: 0 });
  });
});

describe("EdgelogClient.fetchRecords (binary)", () => {
  it("asks for the batch media type, skips records below the requested offset, reads bounds from headers", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1);
    server.append("t", 0, [rec("r0"), rec("r1"), rec("r2")]); // offsets 0..2, one stored batch
    server.append("t", 0, [rec("r3"), rec("r4")]); // offsets 3..4
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
    const res = await client.fetchRecords("t", 0, { offset: 1, maxRecords: 10 });
    expect(server.requests[0]!.headers.get("accept")).toBe(BATCH_MEDIA_TYPE);
    expect(server.requests[0]!.query.toString()).toBe("offset=1&maxRecords=10");
    expect(res.records.map((r) => [r.offset, text(r.value)])).toEqual([
      [1, "r1"],
      [2, "r2"],
      [3, "r3"],
      [4, "r4"],
    ]);
    expect([res.nextOffset, res.highWatermark, res.logStartOffset]).toEqual([5, 5, 0]);
  });

  it("drops records at or past Edgelog-Next-Offset and records of control batches", async () => {
    const data = encodeBatch({}, [rec("a"), rec("b"), rec("c")]);
    const control = encodeBatch({ attributes: ATTR_CONTROL }, [rec("marker")]);
    rewriteBatchHeader(control, { baseOffset: 3 });
    const bodyBytes = new Uint8Array([...data, ...control]);
    const client = new EdgelogClient({
      baseUrl: "http://x",
      fetch: async () => new Response(bodyBytes, { headers: { "Edgelog-Next-Offset": "2", "Edgelog-High-Watermark": "4", "Edgelog-Log-Start-Offset": "0" } }),
    });
    const res = await client.fetchRecords("t", 0, { offset: 0 });
    expect(res.records.map((r) => text(r.value))).toEqual(["a", "b"]);
    expect([res.nextOffset, res.highWatermark]).toEqual([2, 4]);
  });

  it("a missing bounds header or an undecodable body is INTERNAL", async () => {
    const noHeader = new EdgelogClient({ baseUrl: "http://x", fetch: async () => new Response(new Uint8Array(0)) });
    const e1 = (await noHeader.fetchRecords("t", 0, { offset: 0 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e1.code, e1.details?.["header"]]).toEqual(["INTERNAL", "Edgelog-Next-Offset"]);
    const garbage = new EdgelogClient({
      baseUrl: "http://x",
      fetch: async () => new Response("{}", { headers: { "Edgelog-Next-Offset": "0", "Edgelog-High-Watermark": "0", "Edgelog-Log-Start-Offset": "0" } }),
    });
    const e2 = (await garbage.fetchRecords("t", 0, { offset: 0 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect(e2.code).toBe("INTERNAL");
  });

  it("OFFSET_OUT_OF_RANGE carries the bounds in details", async () => {
    const server = new FakeServer();
    server.addTopic("t", 1);
    server.append("t", 0, [rec("a")]);
    const client = new EdgelogClient({ baseUrl: "http://x", fetch: server.fetch });
    const e = (await client.fetchRecords("t", 0, { offset: 7 }).catch((x: unknown) => x)) as EdgelogClientError;
    expect([e.code, e.httpStatus, e.retriable]).toEqual(["OFFSET_OUT_OF_RANGE", 416, false]);
    expect(e.details).toEqual({ logStartOffset: 0, logEndOffset: 1, highWatermark: 1 });
  });
});

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof EdgelogClientError) return `${e.code} ${e.httpStatus}`;
    throw e;
  }
  return "no error";
}

describe("SDK paths never leave their route", () => {
  it("topic names with '.', '..' or empty segments are INVALID_TOPIC_NAME before anything is sent", () => {
    for (const name of ["..", ".", "", "../groups/g1", "a/../b", "a/./b", "a//b", "a/b/"]) {
      expect(
        codeOf(() => topicPath(name)),
        name,
      ).toBe("INVALID_TOPIC_NAME 0");
    }
    expect(topicPath("a..b")).toBe("/v1/topics/a..b");
    expect(topicPath("%2E%2E")).toBe("/v1/topics/%252E%252E");
  });

  it("group ids '.', '..' and '' are INVALID_GROUP_ID before anything is sent", () => {
    for (const id of ["..", ".", ""])
      expect(
        codeOf(() => groupPath(id)),
        id,
      ).toBe("INVALID_GROUP_ID 0");
    expect(groupPath("..g")).toBe("/v1/groups/..g");
  });

  it("deleteTopic('../groups/g1') rejects and sends no request", async () => {
    const server = new FakeServer();
    const client = new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: server.fetch });
    await expect(client.deleteTopic("../groups/g1")).rejects.toMatchObject({ code: "INVALID_TOPIC_NAME", httpStatus: 0 });
    await expect(client.deleteGroup("..")).rejects.toMatchObject({ code: "INVALID_GROUP_ID", httpStatus: 0 });
    expect(server.requests).toEqual([]);
  });
});
