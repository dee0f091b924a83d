/**
 * The structured log core (src/log/format.ts) and the request log's decision
 * (src/log/admin-actions.ts): the JSON shape, redaction, bounds, and which requests log.
 */
import { describe, expect, it } from "vitest";
import { ROUTE_ACCESS } from "../../src/auth/route-access.ts";
import { ADMIN_ACTIONS, requestLogLine, type RequestOutcome } from "../../src/log/admin-actions.ts";
import { formatLogLine, MAX_LOG_DEPTH, MAX_LOG_STRING_CHARS, REDACTED } from "../../src/log/format.ts";

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 6);

describe("formatLogLine", () => {
  it("writes ts, level and event first, then the fields in order", () => {
    const line = formatLogLine("warn", "edgelog.x", { a: 1, b: "two", c: [true, null] }, T0);
    expect(line).toBe('{"ts":"2026-01-02T03:04:05.006Z","level":"warn","event":"edgelog.x","a":1,"b":"two","c":[true,null]}');
  });

  it("has no ts when the clock reads 0 (Workers at module scope)", () => {
    expect(formatLogLine("warn", "edgelog.auth.mode", { message: "m" }, 0)).toBe('{"level":"warn","event":"edgelog.auth.mode","message":"m"}');
  });

  it("never lets a field overwrite ts, level or event", () => {
    expect(JSON.parse(formatLogLine("info", "edgelog.x", { ts: "x", level: "debug", event: "y" }, T0))).toEqual({ ts: "2026-01-02T03:04:05.006Z", level: "info", event: "edgelog.x" });
  });

  it("redacts fields named like secrets, nested too, whatever their case", () => {
    const o = JSON.parse(
      formatLogLine("error", "e", { token: "eyJ.a.b", Authorization: "Bearer eyJ", nested: { password: "p", apiKey: "k", ok: 1 }, jwtSecret: "s", cookie: "c" }, T0),
    ) as Record<string, unknown>;
    expect(o).toMatchObject({ token: REDACTED, Authorization: REDACTED, nested: { password: REDACTED, apiKey: REDACTED, ok: 1 }, jwtSecret: REDACTED, cookie: REDACTED });
    expect(JSON.stringify(o)).not.toMatch(/eyJ|"p"|"k"|"s"|"c"/);
  });

  it("flattens an Error to name, message, code and stack", () => {
    const err = Object.assign(new TypeError("boom"), { code: "E_X" });
    const o = JSON.parse(formatLogLine("error", "e", { error: err }, T0)) as { error: Record<string, unknown> };
    expect(o.error.name).toBe("TypeError");
    expect(o.error.message).toBe("boom");
    expect(o.error.code).toBe("E_X");
    expect(String(o.error.stack)).toContain("boom");
  });

  it("cuts long strings, bounds depth, writes bytes as a length and drops undefined", () => {
    const o = JSON.parse(
      formatLogLine("info", "e", { long: "x".repeat(MAX_LOG_STRING_CHARS + 5), deep: { a: { b: { c: { d: 1 } } } }, bytes: new Uint8Array(7), gone: undefined, n: Number.NaN }, T0),
    ) as Record<string, unknown>;
    expect(o.long).toBe(`${"x".repeat(MAX_LOG_STRING_CHARS)}…[+5 chars]`);
    expect(MAX_LOG_DEPTH).toBe(4);
    expect(o.deep).toEqual({ a: { b: { c: "[depth]" } } });
    expect(o.bytes).toBe("[7 bytes]");
    expect("gone" in o).toBe(false);
    expect(o.n).toBe("NaN");
  });
});

const base: RequestOutcome = { method: "GET", route: "/v1/topics", status: 200, code: null, durationMs: 3, principal: "alice", resources: [], note: null };

describe("requestLogLine", () => {
  it("every admin action route is a registered route with an access rule", () => {
    for (const key of Object.keys(ADMIN_ACTIONS)) expect(ROUTE_ACCESS[key], key).toBeDefined();
  });

  it("a successful data-plane request writes nothing", () => {
    expect(requestLogLine({ ...base, method: "POST", route: "/v1/topics/:topic/records" })).toBeNull();
  });

  it("an admin action writes info when it succeeds, warn when refused, error on 5xx", () => {
    const ok = { ...base, method: "POST", route: "/v1/topics", status: 201, resources: [{ type: "topic", name: "t/n/a", operation: "create" }] };
    expect(requestLogLine(ok)).toEqual({
      level: "info",
      event: "edgelog.admin.action",
      fields: { principal: "alice", action: "topic.create", method: "POST", route: "/v1/topics", resourceType: "topic", resource: "t/n/a", status: 201, durationMs: 3 },
    });
    expect(requestLogLine({ ...ok, status: 409, code: "TOPIC_ALREADY_EXISTS" })?.level).toBe("warn");
    expect(requestLogLine({ ...ok, status: 500, code: "INTERNAL" })?.level).toBe("error");
  });

  it("an error writes edgelog.request.error with its code, or the note's event and fields", () => {
    const e = { ...base, route: "/v1/topics/:topic", status: 404, code: "UNKNOWN_TOPIC_OR_PARTITION" };
    expect(requestLogLine(e)).toEqual({
      level: "warn",
      event: "edgelog.request.error",
      fields: { principal: "alice", method: "GET", route: "/v1/topics/:topic", status: 404, code: "UNKNOWN_TOPIC_OR_PARTITION", durationMs: 3 },
    });
    const denied = requestLogLine({ ...e, status: 403, code: "NOT_AUTHORIZED", note: { event: "edgelog.authz.denied", fields: { operation: "describe" } } });
    expect(denied?.event).toBe("edgelog.authz.denied");
    expect(denied?.fields.operation).toBe("describe");
  });
});
