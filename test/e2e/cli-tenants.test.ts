/**
 * `edgelog tenants …` and `edgelog namespaces …` against a real dev server (issue 17): a tenant
 * with an admin role, a namespace with policies, a topic that inherits them (shown with their
 * source by `topics describe`), and the refusals of a non-empty namespace and tenant.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, type DevServer, startDevServer } from "./dev-server.ts";

const NODE = join(ROOT, "node_modules/.bin/node");
const CLI = join(ROOT, "sdk/bin/edgelog.js");

let server: DevServer;
beforeAll(async () => {
  server = await startDevServer();
});
afterAll(async () => {
  await server?.dispose();
});

function cli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(NODE, [CLI, "--url", server.baseUrl, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout: out, stderr: err }));
  });
}

describe("edgelog tenants and namespaces", () => {
  it("create, set policies, inherit them in a topic, refuse non-empty deletes, clean up", async () => {
    const t = `cli${crypto.randomUUID().slice(0, 8)}`;
    const ns = `${t}/orders`;
    expect(await cli("tenants", "create", t, "--admin-role", "alice")).toEqual({ code: 0, stdout: `Created tenant ${t} (admin roles: alice).\n`, stderr: "" });
    expect(await cli("namespaces", "create", ns)).toEqual({ code: 0, stdout: `Created namespace ${ns}.\n`, stderr: "" });
    expect((await cli("namespaces", "set-policy", ns, "messageTtlSeconds", "3600")).stdout).toBe(`Set messageTtlSeconds=3600 on ${ns}.\n`);
    expect((await cli("namespaces", "set-policy", ns, "backlogQuota", "limitBytes=1048576", "action=producer_exception")).stdout).toBe(
      `Set backlogQuota={"limitBytes":1048576,"action":"producer_exception"} on ${ns}.\n`,
    );
    const bad = await cli("namespaces", "set-policy", ns, "messageTtlSeconds", "--", "-5");
    expect([bad.code, bad.stderr.split(":")[1]?.trim()]).toEqual([1, "INVALID_POLICY"]);

    const policies = (await cli("namespaces", "get-policies", ns)).stdout.split("\n");
    expect(policies[0]).toMatch(/^POLICY\s+VALUE\s+SOURCE$/);
    expect(policies.find((l) => l.startsWith("messageTtlSeconds"))?.split(/\s+/)).toEqual(["messageTtlSeconds", "3600", "namespace"]);
    expect(policies.find((l) => l.startsWith("maxProducersPerTopic"))?.split(/\s+/)).toEqual(["maxProducersPerTopic", "0", "default"]);
    expect((await cli("tenants", "list")).stdout.split("\n")).toContain(t);
    expect(await cli("namespaces", "list", t)).toEqual({ code: 0, stdout: `${ns}\n`, stderr: "" });
    expect((await cli("tenants", "describe", t)).stdout).toBe(`Tenant: ${t}\tAdminRoles: alice\tAllowedClusters: edgelog\nNamespaces: ${ns}\n`);

    const missing = await cli("topics", "create", `${t}/nope/x`);
    expect([missing.code, missing.stderr.split(":")[1]?.trim()]).toEqual([1, "NAMESPACE_NOT_FOUND"]);
    expect((await cli("topics", "create", `${ns}/eu`)).code).toBe(0);
    const described = (await cli("topics", "describe", `${ns}/eu`)).stdout;
    expect(described).toContain("messageTtlSeconds=3600 (namespace)");
    expect(described).toContain('backlogQuota={"limitBytes":1048576,"action":"producer_exception"} (namespace)');

    const notEmpty = await cli("namespaces", "delete", ns);
    expect([notEmpty.code, notEmpty.stderr.split(":")[1]?.trim()]).toEqual([1, "NAMESPACE_NOT_EMPTY"]);
    const tenantNotEmpty = await cli("tenants", "delete", t);
    expect([tenantNotEmpty.code, tenantNotEmpty.stderr.split(":")[1]?.trim()]).toEqual([1, "TENANT_NOT_EMPTY"]);
    expect((await cli("topics", "delete", `${ns}/eu`)).code).toBe(0);
    expect((await cli("namespaces", "remove-policy", ns, "messageTtlSeconds")).stdout).toBe(`Removed messageTtlSeconds from ${ns}: the default applies.\n`);
    expect((await cli("namespaces", "describe", ns)).stdout).toBe(`Namespace: ${ns}\tTopics: 0\nPolicies: backlogQuota={"limitBytes":1048576,"action":"producer_exception"}\n`);
    expect(await cli("namespaces", "delete", ns)).toEqual({ code: 0, stdout: `Deleted namespace ${ns}.\n`, stderr: "" });
    expect(await cli("tenants", "delete", t)).toEqual({ code: 0, stdout: `Deleted tenant ${t}.\n`, stderr: "" });
  });
});
