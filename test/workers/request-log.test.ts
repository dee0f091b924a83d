/**
 * Structured logs through the real gateway with auth on (src/middleware/request-log.ts): an
 * admin action writes one `edgelog.admin.action` line naming principal, action, resource and
 * result; an error writes one line with its code; a denial one `edgelog.authz.denied` line.
 * No line ever carries the bearer token (or any part of its signature).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Env } from "../../src/env.ts";
import { authEnv, ensureNamespace, expectCode, expectOk, hsToken, makeKeys, request, SUPERUSER } from "./auth-helpers.ts";

const lines: { method: string; text: string }[] = [];
let e: Env;
let admin: string;
const id = crypto.randomUUID().slice(0, 8);

beforeAll(async () => {
  for (const method of ["log", "warn", "error", "debug"] as const) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push({ method, text: args.map(String).join(" ") }));
  }
  e = authEnv(await makeKeys());
  admin = await hsToken(SUPERUSER);
});

afterAll(() => {
  vi.restoreAllMocks();
});

/** The JSON lines of `event` written since `from`. */
function events(from: number, event: string): { method: string; line: Record<string, unknown> }[] {
  return lines
    .slice(from)
    .filter((l) => l.text.startsWith("{"))
    .map((l) => ({ method: l.method, line: JSON.parse(l.text) as Record<string, unknown> }))
    .filter((l) => l.line.event === event);
}

function expectNoToken(token: string): void {
  const signature = token.split(".")[2] ?? token;
  for (const l of lines) {
    expect(l.text).not.toContain(token);
    expect(l.text).not.toContain(signature);
    expect(l.text.toLowerCase()).not.toContain("bearer ");
  }
}

describe("request log", () => {
  it("an admin action writes one JSON line: who, what, resource, result, duration; never the token", async () => {
    const topic = `logs-${id}/ns/created`;
    await ensureNamespace(e, admin, topic); // its own admin actions come before `from`
    const from = lines.length;
    await expectOk(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic, partitions: 2 } }), 201);
    const got = events(from, "edgelog.admin.action");
    expect(got).toHaveLength(1);
    const { method, line } = got[0]!;
    expect(method).toBe("log");
    expect(typeof line.ts).toBe("string");
    expect(Number.isNaN(Date.parse(String(line.ts)))).toBe(false);
    expect(typeof line.durationMs).toBe("number");
    const { ts: _ts, durationMs: _d, ...rest } = line;
    expect(rest).toEqual({
      level: "info",
      event: "edgelog.admin.action",
      principal: SUPERUSER,
      action: "topic.create",
      method: "POST",
      route: "/v1/topics",
      resourceType: "topic",
      resource: topic,
      status: 201,
    });
    // A failed admin action: the same event, its status and code, at warn.
    const again = lines.length;
    await expectCode(await request(e, "POST", "/v1/topics", { token: admin, body: { name: topic, partitions: 2 } }), 409, "TOPIC_ALREADY_EXISTS");
    const failed = events(again, "edgelog.admin.action");
    expect(failed.map((f) => [f.method, f.line.level, f.line.status, f.line.code])).toEqual([["warn", "warn", 409, "TOPIC_ALREADY_EXISTS"]]);
    expectNoToken(admin);
  });

  it("an error writes one edgelog.request.error line with the route pattern and code; success writes none", async () => {
    const from = lines.length;
    const topic = `logs-${id}/ns/missing`;
    await expectCode(await request(e, "GET", `/v1/topics/${encodeURIComponent(topic)}/partitions/0/offsets?spec=latest`, { token: admin }), 404, "UNKNOWN_TOPIC_OR_PARTITION");
    await expectOk(await request(e, "GET", "/v1/topics", { token: admin }));
    const got = events(from, "edgelog.request.error");
    expect(got).toHaveLength(1);
    const { ts: _ts, durationMs: _d, ...rest } = got[0]!.line;
    expect(rest).toEqual({
      level: "warn",
      event: "edgelog.request.error",
      principal: SUPERUSER,
      method: "GET",
      route: "/v1/topics/:topic/partitions/:partition/offsets",
      resourceType: "topic",
      resource: topic,
      status: 404,
      code: "UNKNOWN_TOPIC_OR_PARTITION",
    });
    expect(lines.slice(from).filter((l) => l.text.startsWith("{")).length).toBe(1);
    expectNoToken(admin);
  });

  it("a denial and a bad token each write one line with the reason, never the token", async () => {
    const mallory = await hsToken(`mallory-${id}`);
    const from = lines.length;
    await expectCode(await request(e, "DELETE", `/v1/topics/${encodeURIComponent(`logs-${id}/ns/created`)}`, { token: mallory }), 403, "NOT_AUTHORIZED");
    const denied = events(from, "edgelog.authz.denied");
    expect(denied.map((d) => [d.line.principal, d.line.action, d.line.resource, d.line.operation, d.line.code])).toEqual([
      [`mallory-${id}`, "topic.delete", `logs-${id}/ns/created`, "delete", "NOT_AUTHORIZED"],
    ]);
    const bad = `${mallory.slice(0, -4)}AAAA`;
    const before = lines.length;
    await expectCode(await request(e, "GET", "/v1/topics", { token: bad }), 401, "UNAUTHENTICATED");
    const unauth = events(before, "edgelog.auth.unauthenticated");
    expect(unauth).toHaveLength(1);
    expect(unauth[0]!.line.principal).toBeUndefined();
    expect(String(unauth[0]!.line.reason)).toContain("Invalid token");
    expectNoToken(mallory);
    expectNoToken(bad);
  });
});
