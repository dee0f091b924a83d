/**
 * `edgelog top` (sdk/src/cli/top.ts, commands/top.ts): samples parsed from the gateway's own
 * exposition writer, rates from deltas (a counter reset gives no rate), exact frames, and the
 * command's `--once` (text and --json) through main() against a scripted gateway.
 */
import { describe, expect, it } from "vitest";
import { main } from "../../sdk/src/cli/index.ts";
import { type GroupSample, groupJson, groupRows, partitionRows, renderGroupFrame, renderTopicsFrame, topicsSample } from "../../sdk/src/cli/top.ts";
import { ExpositionWriter } from "../../src/metrics/exposition.ts";
import { writeCoverage, writePartitionMetrics } from "../../src/metrics/scrape.ts";
import type { PartitionMetrics } from "../../src/partition/rpc.ts";
import type { GroupDescription } from "../../src/protocol/index.ts";
import { cliIo, FakeServer } from "./sdk-fake-server.ts";

function pm(topic: string, partition: number, o: Partial<PartitionMetrics> = {}): PartitionMetrics {
  return {
    topic,
    partition,
    logStartOffset: 0,
    highWatermark: 0,
    logEndOffset: 0,
    storedBytes: 0,
    recordsIn: 0,
    bytesIn: 0,
    recordsOut: 0,
    bytesOut: 0,
    produceRequests: 0,
    produceDuplicates: 0,
    produceErrors: {},
    fetchRequests: 0,
    fetchErrors: {},
    waiters: 0,
    countersSinceMs: 1_000_000,
    segments: 1,
    subscriptions: [],
    ...o,
  };
}

/** What the gateway writes for these partitions (its own writer, src/metrics/scrape.ts). */
function exposition(ps: PartitionMetrics[], missing = 0): string {
  const w = new ExpositionWriter();
  writePartitionMetrics(w, ps);
  writeCoverage(w, { ok: ps.length, error: missing, omitted: 0 }, { ok: 0, error: 0, omitted: 0 });
  return w.text();
}

const A = "public/default/orders";
const B = "acme/eu/clicks";
const INFO = { url: "http://gw", atMs: Date.UTC(2026, 0, 1, 12, 0, 2), intervalMs: 2000 };

describe("topics view core", () => {
  const s0 = topicsSample(exposition([pm(B, 0, { recordsIn: 10, bytesIn: 1000 }), pm(A, 1), pm(A, 0, { recordsIn: 100, bytesIn: 10_240, recordsOut: 50, bytesOut: 5120 })]), 0);
  const s1 = topicsSample(
    exposition(
      [
        pm(B, 0, { recordsIn: 4, bytesIn: 400, countersSinceMs: 2_000_000, logEndOffset: 30, storedBytes: 3000 }),
        pm(A, 1, { waiters: 2 }),
        pm(A, 0, { recordsIn: 300, bytesIn: 30_720, recordsOut: 150, bytesOut: 15_360, logEndOffset: 300, logStartOffset: 20, storedBytes: 30_720 }),
      ],
      1,
    ),
    2000,
  );

  it("reads every partition of a scrape, sorted, with the scrape's missing partitions", () => {
    expect(s1.partitions.map((p) => [p.topic, p.partition, p.logEndOffset, p.records, p.sizeBytes, p.recordsIn, p.waiters])).toEqual([
      [B, 0, 30, 30, 3000, 4, 0],
      [A, 0, 300, 280, 30_720, 300, 0],
      [A, 1, 0, 0, 0, 0, 2],
    ]);
    expect(s1.missing).toBe(1);
    expect(topicsSample(exposition([pm(A, 0), pm(B, 0)]), 0, "orders").partitions.map((p) => p.topic)).toEqual([A]);
  });

  it("rates are deltas per second; a restarted partition (counter reset) has none", () => {
    const rows = partitionRows(s0, s1);
    expect(rows.map((r) => [r.topic, r.partition, r.recordsInPerSec, r.bytesInPerSec, r.recordsOutPerSec, r.bytesOutPerSec])).toEqual([
      [B, 0, null, null, null, null],
      [A, 0, 100, 10_240, 50, 5120],
      [A, 1, 0, 0, 0, 0],
    ]);
    expect(partitionRows(null, s1).every((r) => r.recordsInPerSec === null)).toBe(true);
  });

  it("renders one frame: header, totals, a row per partition, cut to the terminal height", () => {
    const rows = partitionRows(s0, s1);
    expect(renderTopicsFrame(rows, s1, INFO)).toBe(
      [
        "edgelog top: topics   http://gw   12:00:02 UTC   every 2 s",
        "2 topics, 3 partitions   in 100 rec/s (10.0 KiB/s)   out 50 rec/s (5.0 KiB/s)   stored 32.9 KiB   1 partitions not read (edgelog_scrape_partitions)",
        "",
        "TOPIC           PARTITION  LOG_END_OFFSET  RECORDS  SIZE      IN_REC/S  IN_BYTES/S  OUT_REC/S  OUT_BYTES/S  WAITERS",
        "acme/eu/clicks  0          30              30       2.9 KiB   -         -           -          -            0",
        "orders          0          300             280      30.0 KiB  100       10.0 KiB/s  50         5.0 KiB/s    0",
        "orders          1          0               0        0 B       0         0 B/s       0          0 B/s        2",
        "",
      ].join("\n"),
    );
    const cut = renderTopicsFrame(rows, s1, { ...INFO, maxLines: 6 });
    expect(cut.trimEnd().split("\n")).toHaveLength(6);
    expect(cut).toContain("... 2 more rows");
  });
});

function group(offsets: Array<[string, number, number | null, number | null]>, state: GroupDescription["state"] = "Stable"): GroupDescription {
  return {
    groupId: "g",
    state,
    assignor: "range",
    rebalanceProtocol: "eager",
    groupEpoch: 3,
    targetAssignmentEpoch: 3,
    configs: {} as GroupDescription["configs"],
    members: [{ memberId: "m1", clientId: "app", instanceId: null } as GroupDescription["members"][number]],
    offsets: offsets.map(([topic, partition, committedOffset, logEndOffset]) => ({
      topic,
      partition,
      committedOffset,
      metadata: null,
      memberId: "m1",
      logStartOffset: 0,
      logEndOffset,
      lag: committedOffset === null || logEndOffset === null ? null : logEndOffset - committedOffset,
    })),
    totalLag: offsets.reduce((n, [, , c, e]) => n + (c === null || e === null ? 0 : e - c), 0),
  };
}

describe("group view core", () => {
  const g0: GroupSample = {
    atMs: 0,
    group: group([
      [A, 0, 100, 1000],
      [A, 1, null, 50],
    ]),
  };
  const g1: GroupSample = {
    atMs: 4000,
    group: group([
      [A, 0, 500, 1200],
      [A, 1, 10, 50],
    ]),
  };

  it("lag per partition, commit rate from the committed offsets' rise, and the total", () => {
    const rows = groupRows(g0, g1);
    expect(rows.map((r) => [r.partition, r.committedOffset, r.lag, r.committedPerSec, r.clientId])).toEqual([
      [0, 500, 700, 100, "app"],
      [1, 10, 40, null, "app"],
    ]);
    expect(groupJson(rows, g1, 2000)).toMatchObject({ view: "group", group: "g", state: "Stable", members: 1, totalLag: 740, committedPerSec: 100 });
    expect(renderGroupFrame(rows, g1, { ...INFO, atMs: INFO.atMs })).toBe(
      [
        "edgelog top: group g   http://gw   12:00:02 UTC   every 2 s",
        "state Stable   members 1   epoch 3   total lag 740   committed 100 rec/s (lag gone in ~8 s at this rate)",
        "",
        "TOPIC   PARTITION  COMMITTED  LOG_END_OFFSET  LAG  COMMITTED_REC/S  CLIENT  MEMBER",
        "orders  0          500        1200            700  100              app     m1",
        "orders  1          10         50              40   -                app     m1",
        "",
      ].join("\n"),
    );
  });
});

describe("edgelog top --once", () => {
  /** A gateway whose metrics counters rise by 100 records per scrape, and one group. */
  function gateway() {
    let scrapes = 0;
    const fake = new FakeServer();
    const fetch: typeof globalThis.fetch = async (input, init) => {
      const path = new URL(String(input)).pathname;
      if (path === "/v1/metrics") {
        scrapes++;
        return new Response(exposition([pm(A, 0, { recordsIn: 100 * scrapes, bytesIn: 1000 * scrapes, logEndOffset: 100 * scrapes })]), {
          headers: { "content-type": "text/plain; version=0.0.4" },
        });
      }
      if (path === "/v1/groups/g") return Response.json(group([[A, 0, 40 * scrapes, 100]]));
      return fake.fetch(input, init);
    };
    return { fake, fetch, scrapes: () => scrapes };
  }

  it("--json: one JSON object from two scrapes one interval apart, with rates", async () => {
    const gw = gateway();
    const io = cliIo(gw.fake);
    io.value.fetch = gw.fetch;
    expect(await main(["top", "--once", "--json", "--interval", "0.1"], io.value)).toBe(0);
    expect(gw.scrapes()).toBe(2);
    const frame = JSON.parse(io.stdout()) as { view: string; partitions: Array<Record<string, unknown>> };
    expect(frame.view).toBe("topics");
    expect(frame.partitions).toHaveLength(1);
    const p = frame.partitions[0]!;
    expect([p.topic, p.partition, p.logEndOffset, p.recordsIn]).toEqual([A, 0, 200, 200]);
    expect(p.recordsInPerSec as number).toBeGreaterThan(0);
    expect(p.bytesInPerSec as number).toBeCloseTo((p.recordsInPerSec as number) * 10, 6);
    expect(io.stderr()).toBe("");
  });

  it("text, and --group: one frame of the group's lag", async () => {
    const gw = gateway();
    const io = cliIo(gw.fake);
    io.value.fetch = gw.fetch;
    expect(await main(["top", "--once", "--interval", "0.1"], io.value)).toBe(0);
    expect(io.stdout()).toMatch(/^edgelog top: topics {3}http:\/\/127\.0\.0\.1:8787 {3}\d\d:\d\d:\d\d UTC {3}every 0\.1 s\n1 topic, 1 partition {3}in [\d,]+ rec\/s/);
    expect(io.stdout()).toMatch(/\norders {2}0 {10}200 /);
    const gio = cliIo(gw.fake);
    gio.value.fetch = gw.fetch;
    expect(await main(["top", "--group", "g", "--once", "--json", "--interval", "0.1"], gio.value)).toBe(0);
    expect(JSON.parse(gio.stdout())).toMatchObject({ view: "group", group: "g", totalLag: 100 - 40 * 2, partitions: [{ topic: A, partition: 0, lag: 20 }] });
  });

  it("refuses --group with --topic, and a bad interval (usage errors, exit 2)", async () => {
    const io = cliIo(new FakeServer());
    expect(await main(["top", "--group", "g", "--topic", "t"], io.value)).toBe(2);
    expect(await main(["top", "--interval", "0"], io.value)).toBe(2);
    expect(io.stderr()).toContain("--interval must be a number of seconds");
  });
});
