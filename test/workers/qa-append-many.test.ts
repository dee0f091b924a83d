/**
 * QA: PartitionDO.appendMany when appending one request throws (rather than returning an
 * error result). Each carried request is its own transaction and "one request's failure MUST
 * NOT affect another's" (docs/PROTOCOL.md "Atomicity and acks"): the throwing request gets
 * INTERNAL, the others their offsets (found by QA: it used to reject the whole RPC; fixed).
 * The throwing request's batch is not a Uint8Array, standing in for any unexpected throw.
 */
import { describe as suite, expect, it } from "vitest";
import type { AppendOk, AppendRequest, RpcResult } from "../../src/partition/rpc.ts";
import { createTopic, fetchJson, randomTopic, oneRecordBatch, partitionObject } from "./helpers.ts";

const partition = partitionObject;
const batch = oneRecordBatch;

suite("QA PartitionDO.appendMany: a throwing request", () => {
  it("a request that throws fails alone; the committed request before it gets its offsets", async () => {
    const t = randomTopic();
    const created = await createTopic(t);
    const throwing = { batches: [[1, 2, 3]], crcVerified: true } as unknown as AppendRequest;
    let out: unknown;
    try {
      out = await partition(created.topicId).appendMany([{ batches: [batch("a", 10)] }, throwing, { batches: [batch("c", 12)] }]);
    } catch (e) {
      out = e;
    }
    // What was committed:
    const stored = (await fetchJson(t, 0, "offset=0")).records.map((r) => [r.offset, r.value]);
    expect({ out: Array.isArray(out) ? (out as RpcResult<AppendOk>[]).map((r) => (r.ok ? r.baseOffset : r.code)) : String(out), stored }).toEqual({
      out: [0, "INTERNAL", 1],
      stored: [
        [0, "a"],
        [1, "c"],
      ],
    });
  });
});
