import { describe as suite, expect, it } from "vitest";
import type { ListOffsetsResponse } from "../../src/protocol/index.ts";
import { call, createTopic, expectError, produce, randomTopic } from "./helpers.ts";

async function offsets(name: string, query: string): Promise<ListOffsetsResponse> {
  const res = await call(`/v1/topics/${name}/partitions/0/offsets?${query}`);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return JSON.parse(text) as ListOffsetsResponse;
}

/** One produce request (= one stored batch) per inner list of timestamps. */
async function topicWithTimestamps(batches: number[][], configs?: Record<string, unknown>): Promise<string> {
  const name = randomTopic();
  await createTopic(name, 1, configs);
  for (const b of batches) await produce(`/v1/topics/${name}/partitions/0/records`, { records: b.map((timestamp) => ({ value: "v", timestamp })) });
  return name;
}

suite("ListOffsets", () => {
  it("on an empty partition: earliest = latest = 0, timestamp specs find nothing", async () => {
    const name = await topicWithTimestamps([]);
    const full = `public/default/${name}`;
    expect(await offsets(name, "spec=earliest")).toEqual({ topic: full, partition: 0, spec: "earliest", offset: 0 });
    expect(await offsets(name, "spec=latest")).toEqual({ topic: full, partition: 0, spec: "latest", offset: 0 });
    expect(await offsets(name, "spec=max_timestamp")).toEqual({ topic: full, partition: 0, spec: "max_timestamp", offset: null, timestamp: null });
    expect(await offsets(name, "spec=timestamp&timestamp=0")).toEqual({ topic: full, partition: 0, spec: "timestamp", offset: null, timestamp: null });
  });

  it("earliest and latest bound the log", async () => {
    const name = await topicWithTimestamps([[1, 2], [3]]);
    expect((await offsets(name, "spec=earliest")).offset).toBe(0);
    expect((await offsets(name, "spec=latest")).offset).toBe(3);
  });

  it("timestamp T finds the first offset with timestamp >= T even when timestamps are not monotonic", async () => {
    // offset:    0      1     2      3      4     5
    // timestamp: 1000 | 4000  1500 | 2000 | 1200  6000
    const name = await topicWithTimestamps([[1000], [4000, 1500], [2000], [1200, 6000]]);
    const at = async (t: number): Promise<[number | null, number | null | undefined]> => {
      const r = await offsets(name, `spec=timestamp&timestamp=${t}`);
      return [r.offset, r.timestamp];
    };
    expect(await at(0)).toEqual([0, 1000]);
    expect(await at(1000)).toEqual([0, 1000]);
    expect(await at(1001)).toEqual([1, 4000]);
    expect(await at(1500)).toEqual([1, 4000]); // not offset 2 (1500): offset 1 comes first
    expect(await at(4000)).toEqual([1, 4000]);
    expect(await at(4001)).toEqual([5, 6000]);
    expect(await at(6000)).toEqual([5, 6000]);
    expect(await at(6001)).toEqual([null, null]); // none
  });

  it("max_timestamp is the first record with the largest timestamp (KIP-734)", async () => {
    const name = await topicWithTimestamps([[1000], [7000, 1500], [7000], [1200]]);
    const r = await offsets(name, "spec=max_timestamp");
    expect([r.offset, r.timestamp]).toEqual([1, 7000]);
  });

  it("under LogAppendTime the broker's timestamps are searched", async () => {
    const before = Date.now();
    const name = await topicWithTimestamps([[5], [5]], { "message.timestamp.type": "LogAppendTime" });
    const r = await offsets(name, "spec=max_timestamp");
    expect(r.timestamp).toBeGreaterThanOrEqual(before);
    expect((await offsets(name, "spec=timestamp&timestamp=6")).offset).toBe(0);
  });

  it("bad specs -> INVALID_OFFSET; unknown partition -> UNKNOWN_TOPIC_OR_PARTITION", async () => {
    const name = await topicWithTimestamps([[1]]);
    for (const q of ["", "spec=first", "spec=timestamp", "spec=timestamp&timestamp=-1", "spec=timestamp&timestamp=x"]) {
      await expectError(await call(`/v1/topics/${name}/partitions/0/offsets?${q}`), "INVALID_OFFSET", 400);
    }
    await expectError(await call(`/v1/topics/${name}/partitions/3/offsets?spec=latest`), "UNKNOWN_TOPIC_OR_PARTITION", 404);
  });
});
