/**
 * Client quotas through the real gateway and QuotaDO: a principal limited to 1 MiB/s that
 * produces as fast as it can for 10 s is accepted at 0.5-1.5 MiB/s (wide bounds: a noisy
 * machine; the exact figure is the benchmark's), while an unlimited principal producing at the
 * same time is never throttled. THROTTLED answers are 429 with Retry-After and throttleTimeMs.
 */
import { beforeAll, describe, expect, it } from "vitest";
import type { Env } from "../../src/env.ts";
import { authEnv, ensureNamespace, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

const MiB = 1024 * 1024;
let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);

beforeAll(async () => {
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
});

describe("quotas", () => {
  it("request_rate: the answer past the burst is 429 THROTTLED with Retry-After and an integer throttleTimeMs, and changes nothing", async () => {
    const user = `rr-${id}`;
    const topic = `q-${id}/ns/rr`;
    await ensureNamespace(e, admin, topic);
    await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic } }), 201);
    await expectOk(await request(e, "POST", "/v1/acls", { token: admin, body: { principal: user, resourceType: "topic", resourceName: topic, operation: "write" } }), 201);
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user, request_rate: 1 } }));
    const token = await hsToken(user);
    const body = { records: [{ value: "x" }] };
    // Burst = 2 windows x 1 s x 1 request/s = 2 requests; the third finds the bucket empty
    // (credits 0: admitted, KIP-599), the fourth in debt.
    const statuses: number[] = [];
    let throttledRes: Response | undefined;
    for (let i = 0; i < 4; i++) {
      const res = await request(e, "POST", `/v1/topics/${topic}/partitions/0/records`, { token, body });
      statuses.push(res.status);
      if (res.status === 429) throttledRes = res;
      else await res.text();
    }
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.at(-1)).toBe(429);
    expect(Number(throttledRes!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const err = await expectCode(throttledRes!, 429, "THROTTLED");
    expect(err.retriable).toBe(true);
    expect(Number.isInteger(err.details?.throttleTimeMs)).toBe(true);
    expect(err.details?.throttleTimeMs as number).toBeGreaterThan(0);
    const accepted = statuses.filter((s) => s === 200).length;
    const t = (await expectOk(await request(e, "GET", `/v1/topics/${topic}`, { token: admin }))) as { partitionDetails: { highWatermark: number }[] };
    expect(t.partitionDetails[0]!.highWatermark).toBe(accepted);
    // Removing the quota lifts it (this isolate's cache is invalidated by the admin write).
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user, request_rate: null } }));
    const quotas = (await expectOk(await request(e, "GET", "/v1/quotas", { token: admin }))) as { quotas: { user: string | null }[] };
    expect(quotas.quotas.some((q) => q.user === user)).toBe(false);
  });

  it("producer_byte_rate 1 MiB/s for 10 s: accepted at 0.5-1.5 MiB/s; an unlimited principal is not throttled", async () => {
    const limited = `lim-${id}`;
    const free = `free-${id}`;
    const topic = `q-${id}/ns/flood`;
    await ensureNamespace(e, admin, topic);
    await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic, partitions: 2 } }), 201);
    for (const p of [limited, free]) {
      await expectOk(await request(e, "POST", "/v1/acls", { token: admin, body: { principal: p, resourceType: "topic", resourceName: topic, operation: "write" } }), 201);
    }
    await expectOk(await request(e, "PUT", "/v1/quotas", { token: admin, body: { user: limited, producer_byte_rate: MiB } }));
    const limitedToken = await hsToken(limited);
    const freeToken = await hsToken(free);
    const payload = JSON.stringify({ records: [{ value: "v".repeat(64 * 1024) }] });
    const bytes = new TextEncoder().encode(payload).length;

    const durationMs = 10_000;
    const start = Date.now();
    let acceptedBytes = 0;
    let throttled = 0;
    const freeStatuses = new Map<number, number>();
    const flood = async (token: string, partition: number, onStatus: (s: number) => void) => {
      while (Date.now() - start < durationMs) {
        const res = await request(e, "POST", `/v1/topics/${topic}/partitions/${partition}/records`, { token, rawBody: payload, headers: { "content-type": "application/json" } });
        await res.arrayBuffer();
        onStatus(res.status);
        if (res.status === 429) await new Promise((r) => setTimeout(r, 1));
      }
    };
    const count = (s: number) => {
      if (s === 200) acceptedBytes += bytes;
      else if (s === 429) throttled++;
      else throw new Error(`unexpected status ${s}`);
    };
    await Promise.all([flood(limitedToken, 0, count), flood(limitedToken, 0, count), flood(freeToken, 1, (s) => void freeStatuses.set(s, (freeStatuses.get(s) ?? 0) + 1))]);
    const elapsedSec = (Date.now() - start) / 1000;
    const rate = acceptedBytes / elapsedSec / MiB;
    console.log(`quota accuracy: accepted ${(acceptedBytes / MiB).toFixed(2)} MiB in ${elapsedSec.toFixed(1)} s = ${rate.toFixed(3)} MiB/s against 1 MiB/s (${throttled} throttled answers)`);
    expect(throttled).toBeGreaterThan(0);
    expect(rate).toBeGreaterThanOrEqual(0.5);
    expect(rate).toBeLessThanOrEqual(1.5);
    expect([...freeStatuses.keys()]).toEqual([200]);
  }, 60_000);
});
