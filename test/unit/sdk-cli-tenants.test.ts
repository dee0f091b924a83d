/** `edgelog tenants …` and `edgelog namespaces …` command lines (pulsar-admin's), parsed exactly. */
import { describe, expect, it } from "vitest";
import { DEFAULT_URL, UsageError, parseCli } from "../../sdk/src/cli/index.ts";

describe("parseCli: tenants and namespaces", () => {
  it("parses every command", () => {
    expect(parseCli(["tenants", "list", "--json"])).toEqual({ kind: "tenants list", url: DEFAULT_URL, json: true });
    expect(parseCli(["tenants", "create", "acme", "--admin-role", "alice", "--admin-role", "bob"])).toEqual({
      kind: "tenants create",
      url: DEFAULT_URL,
      name: "acme",
      adminRoles: ["alice", "bob"],
      ifNotExists: undefined,
    });
    expect(parseCli(["tenants", "create", "acme", "--if-not-exists"])).toEqual({ kind: "tenants create", url: DEFAULT_URL, name: "acme", adminRoles: [], ifNotExists: true });
    expect(parseCli(["tenants", "describe", "acme"])).toEqual({ kind: "tenants describe", url: DEFAULT_URL, name: "acme", json: false });
    expect(parseCli(["tenants", "delete", "acme"])).toEqual({ kind: "tenants delete", url: DEFAULT_URL, name: "acme" });
    expect(parseCli(["namespaces", "list", "acme"])).toEqual({ kind: "namespaces list", url: DEFAULT_URL, tenant: "acme", json: false });
    expect(parseCli(["namespaces", "create", "acme/orders"])).toEqual({ kind: "namespaces create", url: DEFAULT_URL, namespace: "acme/orders", ifNotExists: undefined });
    expect(parseCli(["namespaces", "describe", "acme/orders", "--json"])).toEqual({ kind: "namespaces describe", url: DEFAULT_URL, namespace: "acme/orders", json: true });
    expect(parseCli(["namespaces", "delete", "acme/orders"])).toEqual({ kind: "namespaces delete", url: DEFAULT_URL, namespace: "acme/orders" });
    expect(parseCli(["namespaces", "get-policies", "acme/orders"])).toEqual({ kind: "namespaces get-policies", url: DEFAULT_URL, namespace: "acme/orders", json: false });
    expect(parseCli(["namespaces", "remove-policy", "acme/orders", "retention"])).toEqual({
      kind: "namespaces remove-policy",
      url: DEFAULT_URL,
      namespace: "acme/orders",
      policy: "retention",
    });
  });

  it("set-policy takes one JSON value or field=value words (numbers as numbers)", () => {
    const set = (...words: string[]) => (parseCli(["namespaces", "set-policy", "acme/orders", ...words]) as { value: unknown }).value;
    expect(set("messageTtlSeconds", "3600")).toBe(3600);
    expect(set("retention", '{"timeMs":-1,"sizeBytes":1048576}')).toEqual({ timeMs: -1, sizeBytes: 1048576 });
    expect(set("backlogQuota", "limitBytes=1048576", "action=producer_exception")).toEqual({ limitBytes: 1048576, action: "producer_exception" });
    expect(set("publishRate", "messagesPerSecond=-1", "bytesPerSecond=1024")).toEqual({ messagesPerSecond: -1, bytesPerSecond: 1024 });
  });

  it("refuses malformed lines with a UsageError", () => {
    for (const argv of [
      ["namespaces", "create", "acme"],
      ["namespaces", "create", "a/b/c"],
      ["namespaces", "set-policy", "acme/orders", "ttl", "5"],
      ["namespaces", "set-policy", "acme/orders", "messageTtlSeconds"],
      ["namespaces", "set-policy", "acme/orders", "messageTtlSeconds", "{"],
      ["namespaces", "set-policy", "acme/orders", "backlogQuota", "limitBytes=1", "oops"],
      ["namespaces", "remove-policy", "acme/orders"],
      ["tenants", "create"],
      ["tenants", "describe", "a", "b"],
    ]) {
      expect(() => parseCli(argv, {}), argv.join(" ")).toThrow(UsageError);
    }
  });
});
