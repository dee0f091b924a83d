/**
 * The gateway's topic cache (src/gateway/topics.ts): TTL and metadata-offset staleness. Pure:
 * the clock and the isolate's offset watermark are injected.
 */
import { describe, expect, it } from "vitest";
import { TopicCache } from "../../src/gateway/topics.ts";
import { latestMetadataOffset, noteMetadataOffset } from "../../src/metadata/offsets.ts";
import { EdgelogError } from "../../src/protocol/errors.ts";
import type { TopicSummary } from "../../src/protocol/types.ts";

const topic = (name: string, partitions = 1): TopicSummary => ({ name, partitions, topicId: `id-${name}-${partitions}` }) as TopicSummary;

describe("TopicCache: time to live", () => {
  it("answers an entry until its TTL is over, then misses", () => {
    const c = new TopicCache(1000);
    c.put(topic("t/n/a"), 0);
    expect(c.peek("t/n/a", 999)?.topicId).toBe("id-t/n/a-1");
    expect(c.peek("t/n/a", 1000)).toBeUndefined();
    expect([c.hits, c.misses, c.offsetRefreshes, c.size]).toEqual([1, 1, 0, 0]);
  });

  it("without metadata offsets (MetadataDO), only the TTL and invalidation end an entry", () => {
    const c = new TopicCache(1000);
    c.put(topic("t/n/a"), 0);
    expect(c.knownOffset).toBe(0);
    expect(c.peek("t/n/a", 500)).toBeDefined();
    c.invalidate("t/n/a");
    expect(c.peek("t/n/a", 500)).toBeUndefined();
  });
});

describe("TopicCache: metadata offsets", () => {
  it("an entry older than an offset seen later is refreshed; one at or after it is used", () => {
    const c = new TopicCache(60_000);
    c.put(topic("t/n/a"), 0, 10);
    c.put(topic("t/n/b"), 0, 12);
    expect(c.knownOffset).toBe(12);
    // a was answered at 10, but 12 is known: a may miss what records 11..12 changed.
    expect(c.peek("t/n/a", 1)).toBeUndefined();
    expect(c.peek("t/n/b", 1)?.name).toBe("t/n/b");
    expect([c.hits, c.misses, c.offsetRefreshes]).toEqual([1, 1, 1]);
    // The refresh brings a's answer at 12: used again.
    c.put(topic("t/n/a", 3), 1, 12);
    expect(c.peek("t/n/a", 2)?.partitions).toBe(3);
  });

  it("an offset observed from any answer (an admin write, a partition) makes older entries refresh", () => {
    const c = new TopicCache(60_000);
    c.put(topic("t/n/a"), 0, 5);
    c.observe(4); // older: nothing changes
    expect(c.peek("t/n/a", 1)).toBeDefined();
    c.observe(6);
    expect(c.peek("t/n/a", 1)).toBeUndefined();
    expect(c.offsetRefreshes).toBe(1);
  });

  it("follows the isolate's watermark (src/metadata/offsets.ts), per metadata group", () => {
    const group = `g-${Math.random()}`;
    const c = new TopicCache(60_000, () => latestMetadataOffset(group));
    c.put(topic("t/n/a"), 0, 7);
    noteMetadataOffset(`${group}-other`, 100); // another group's offsets are not comparable
    expect(c.peek("t/n/a", 1)).toBeDefined();
    noteMetadataOffset(group, 7);
    expect(c.peek("t/n/a", 1)).toBeDefined();
    noteMetadataOffset(group, 8); // a write through this isolate, say
    expect(c.peek("t/n/a", 1)).toBeUndefined();
    noteMetadataOffset(group, 3); // never goes back
    expect(latestMetadataOffset(group)).toBe(8);
  });

  it("an untagged entry is refreshed once any offset is known (it may be older than anything)", () => {
    const c = new TopicCache(60_000);
    c.put(topic("t/n/a"), 0);
    c.observe(1);
    expect(c.peek("t/n/a", 1)).toBeUndefined();
  });

  it("NOT_LEADER and NOT_LEADER_OR_FOLLOWER drop the entry; other errors do not", () => {
    const c = new TopicCache(60_000);
    c.put(topic("t/n/a"), 0, 1);
    expect(c.invalidateOnPlacementError("t/n/a", new EdgelogError("OFFSET_OUT_OF_RANGE"))).toBe(false);
    expect(c.invalidateOnPlacementError("t/n/a", new Error("NOT_LEADER"))).toBe(false);
    expect(c.peek("t/n/a", 1)).toBeDefined();
    expect(c.invalidateOnPlacementError("t/n/a", new EdgelogError("NOT_LEADER"))).toBe(true);
    expect(c.peek("t/n/a", 1)).toBeUndefined();
    c.put(topic("t/n/a"), 0, 1);
    const kafka = Object.assign(new EdgelogError("NOT_LEADER"), { code: "NOT_LEADER_OR_FOLLOWER" });
    expect(c.invalidateOnPlacementError("t/n/a", kafka)).toBe(true);
    expect(c.size).toBe(0);
  });
});
