/**
 * SDK and CLI edges found in QA: topic and group names that a URL would resolve away (path
 * traversal to another route), a leading U+FEFF that text decoding dropped, `edgelog
 * produce` to a missing topic with nothing on stdin, and poll(0) answering [] while a fetch
 * of an earlier poll was still in flight (so "[] from poll(0)" did not mean "caught up").
 */
import { Readable, Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { formatRecord, main, type CliIo } from "../../sdk/src/cli/index.ts";
import { EdgelogClient, groupPath, topicPath } from "../../sdk/src/client.ts";
import { Consumer } from "../../sdk/src/consumer.ts";
import { EdgelogClientError } from "../../sdk/src/errors.ts";
import { toText } from "../../sdk/src/text.ts";
import { FakeServer, utf8 } from "./sdk-fake-server.ts";

function io(server: FakeServer, stdin: string[] = []) {
  const out: Buffer[] = [];
  const err: string[] = [];
  const value: CliIo = {
    stdin: Readable.from(stdin.map((s) => Buffer.from(s))),
    stdout: new Writable({ write: (c: Buffer, _e, cb) => (out.push(Buffer.from(c)), cb()) }),
    stderr: new Writable({ write: (c: Buffer, _e, cb) => (err.push(c.toString()), cb()) }),
    env: {},
    fetch: server.fetch,
  };
  return { value, stdout: () => Buffer.concat(out).toString(), stderr: () => err.join("") };
}

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
      expect(codeOf(() => topicPath(name)), name).toBe("INVALID_TOPIC_NAME 0");
    }
    expect(topicPath("a..b")).toBe("/v1/topics/a..b");
    expect(topicPath("%2E%2E")).toBe("/v1/topics/%252E%252E");
  });

  it("group ids '.', '..' and '' are INVALID_GROUP_ID before anything is sent", () => {
    for (const id of ["..", ".", ""]) expect(codeOf(() => groupPath(id)), id).toBe("INVALID_GROUP_ID 0");
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

describe("text keeps a leading U+FEFF (it is data, as in the server's JSON answers)", () => {
  it("toText and `consume --json` keep it", () => {
    const bytes = utf8("\uFEFFhello");
    expect(toText(bytes)).toBe("\uFEFFhello");
    const line = formatRecord(
      { topic: "t", partition: 0, offset: 7, timestamp: 1, key: utf8("\uFEFF"), value: bytes, headers: [{ key: "h", value: utf8("\uFEFFx") }] },
      { json: true, encoding: "string", printKey: false, keySeparator: "\t" },
    );
    expect(JSON.parse(new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }).decode(line))).toEqual({
      topic: "t",
      partition: 0,
      offset: 7,
      timestamp: 1,
      key: "\uFEFF",
      value: "\uFEFFhello",
      headers: [{ key: "h", value: "\uFEFFx" }],
    });
  });
});

describe("edgelog produce to a missing topic", () => {
  it("exits 1 with UNKNOWN_TOPIC_OR_PARTITION even when stdin is empty", async () => {
    const server = new FakeServer();
    const p = io(server, []);
    expect(await main(["produce", "missing"], p.value)).toBe(1);
    expect(p.stderr()).toBe("edgelog: UNKNOWN_TOPIC_OR_PARTITION: The topic or partition does not exist.\n");
  });

  it("still produces every line to an existing topic", async () => {
    const server = new FakeServer();
    server.addTopic("logs", 1);
    const p = io(server, ["a\nb\n"]);
    expect(await main(["produce", "logs"], p.value)).toBe(0);
    expect(server.log("logs", 0).records.map((r) => toText(r.value))).toEqual(["a", "b"]);
  });
});

describe("Consumer.poll({maxWaitMs: 0}) answers [] only when every partition was asked", () => {
  it("waits for a fetch an earlier poll left in flight instead of answering [] without data", async () => {
    const server = new FakeServer();
    server.addTopic("t", 2);
    server.append("t", 0, [{ key: null, value: utf8("slow"), headers: [], timestamp: 1 }]);
    server.append("t", 1, [{ key: null, value: utf8("fast"), headers: [], timestamp: 1 }]);
    // Partition 0's fetches answer 150 ms late; everything else at once.
    const slowFetch: typeof fetch = async (input, init) => {
      const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
      if (/\/partitions\/0\/records/.test(url)) await new Promise((r) => setTimeout(r, 150));
      return server.fetch(input, init);
    };
    const consumer = new Consumer(new EdgelogClient({ baseUrl: "http://x", fetch: slowFetch }));
    consumer.assign([
      { topic: "t", partition: 0 },
      { topic: "t", partition: 1 },
    ]);
    await consumer.seekToBeginning();
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const batch = await consumer.poll({ maxWaitMs: 0 });
      if (batch.length === 0) break;
      seen.push(...batch.map((r) => `${r.partition}:${toText(r.value)}`));
    }
    expect(seen).toEqual(["1:fast", "0:slow"]);
    consumer.close();
  });
});
