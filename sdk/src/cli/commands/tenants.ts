/**
 * Pulsar's tenants and namespaces (docs/TENANTS.md): `tenants list | create | describe | delete`
 * and `namespaces list | create | describe | delete | set-policy | get-policies | remove-policy`
 * (pulsar-admin tenants / namespaces).
 *
 * A policy value is given as JSON (`3600`, `'{"limitBytes":1048576,"action":"producer_exception"}'`)
 * or, for the object policies, as `field=value` words (`limitBytes=1048576 action=producer_exception`),
 * numbers read as numbers.
 */
import type { PolicyName, TopicPolicies } from "../../../../src/protocol/policies.ts";
import { POLICY_NAMES } from "../../../../src/protocol/policies.ts";
import { EdgelogError } from "../../../../src/protocol/errors.ts";
import { flag, JSON_OPTION, list, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { formatTable } from "../format.ts";

const JSON_OPTIONS = { json: JSON_OPTION } as const;

export type TenantsCommand =
  | { kind: "tenants list"; url: string; json: boolean }
  | { kind: "tenants create"; url: string; name: string; adminRoles: string[]; ifNotExists?: boolean | undefined }
  | { kind: "tenants describe"; url: string; name: string; json: boolean }
  | { kind: "tenants delete"; url: string; name: string }
  | { kind: "namespaces list"; url: string; tenant: string; json: boolean }
  | { kind: "namespaces create"; url: string; namespace: string; ifNotExists?: boolean | undefined }
  | { kind: "namespaces describe"; url: string; namespace: string; json: boolean }
  | { kind: "namespaces delete"; url: string; namespace: string }
  | { kind: "namespaces set-policy"; url: string; namespace: string; policy: PolicyName; value: unknown }
  | { kind: "namespaces get-policies"; url: string; namespace: string; json: boolean }
  | { kind: "namespaces remove-policy"; url: string; namespace: string; policy: PolicyName };

function namespaceArg(raw: string): string {
  if (!/^[^/]+\/[^/]+$/.test(raw)) throw new UsageError(`expected TENANT/NAMESPACE, got ${JSON.stringify(raw)}`);
  return raw;
}

function policyArg(raw: string): PolicyName {
  if (!(POLICY_NAMES as readonly string[]).includes(raw)) throw new UsageError(`unknown policy ${JSON.stringify(raw)}: use ${POLICY_NAMES.join(", ")}`);
  return raw as PolicyName;
}

/** The value words of set-policy: one JSON value, or `field=value` words of an object (numbers as numbers). */
export function policyValue(words: readonly string[]): unknown {
  if (words.length === 0) throw new UsageError("namespaces set-policy: give the VALUE");
  if (words.length === 1 && !/^[A-Za-z]+=/.test(words[0]!)) {
    try {
      return JSON.parse(words[0]!);
    } catch {
      throw new UsageError(`VALUE must be JSON or field=value words, got ${JSON.stringify(words[0])}`);
    }
  }
  const out: Record<string, unknown> = {};
  for (const w of words) {
    const eq = w.indexOf("=");
    if (eq <= 0) throw new UsageError(`expected field=value, got ${JSON.stringify(w)}`);
    const raw = w.slice(eq + 1);
    out[w.slice(0, eq)] = /^-?\d+$/.test(raw) ? Number(raw) : raw;
  }
  return out;
}

const shown = (v: unknown): string => (typeof v === "object" ? JSON.stringify(v) : String(v));

export const tenantsList = defineCommand<Extract<TenantsCommand, { kind: "tenants list" }>>({
  name: "tenants list",
  usage: "  tenants list [--json]\n",
  options: JSON_OPTIONS,
  args: [],
  parse: ({ url, values }) => ({ kind: "tenants list", url, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const tenants = await admin.listTenants();
    await out.write(cmd.json ? `${JSON.stringify(tenants, null, 2)}\n` : tenants.map((t) => `${t}\n`).join(""));
  },
});

export const tenantsCreate = defineCommand<Extract<TenantsCommand, { kind: "tenants create" }>>({
  name: "tenants create",
  usage:
    "  tenants create NAME [--admin-role ROLE ...] [--if-not-exists]\n      Allowed clusters are always [edgelog] (one deployment is one cluster); --if-not-exists: an existing tenant is success, left as it is.\n",
  options: { "admin-role": { type: "string", multiple: true }, "if-not-exists": { type: "boolean" } },
  args: ["NAME"],
  parse: ({ url, args, values }) => ({
    kind: "tenants create",
    url,
    name: args[0]!,
    adminRoles: list(values, "admin-role") ?? [],
    ifNotExists: flag(values, "if-not-exists") || undefined,
  }),
  async run(cmd, { admin, out }) {
    try {
      const t = await admin.createTenant(cmd.name, cmd.adminRoles.length === 0 ? {} : { adminRoles: cmd.adminRoles });
      await out.write(`Created tenant ${t.name}${t.adminRoles.length === 0 ? "" : ` (admin roles: ${t.adminRoles.join(", ")})`}.\n`);
    } catch (e) {
      if (!(cmd.ifNotExists === true && e instanceof EdgelogError && e.code === "TENANT_ALREADY_EXISTS")) throw e;
      await out.write(`Tenant ${cmd.name} already exists.\n`);
    }
  },
});

export const tenantsDescribe = defineCommand<Extract<TenantsCommand, { kind: "tenants describe" }>>({
  name: "tenants describe",
  usage: "  tenants describe NAME [--json]\n",
  options: JSON_OPTIONS,
  args: ["NAME"],
  parse: ({ url, args, values }) => ({ kind: "tenants describe", url, name: args[0]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const t = await admin.describeTenant(cmd.name);
    if (cmd.json) return void (await out.write(`${JSON.stringify(t, null, 2)}\n`));
    await out.write(`Tenant: ${t.name}\tAdminRoles: ${t.adminRoles.join(",") || "-"}\tAllowedClusters: ${t.allowedClusters.join(",")}\nNamespaces: ${t.namespaces.join(", ") || "-"}\n`);
  },
});

export const tenantsDelete = defineCommand<Extract<TenantsCommand, { kind: "tenants delete" }>>({
  name: "tenants delete",
  usage: "  tenants delete NAME\n",
  options: {},
  args: ["NAME"],
  parse: ({ url, args }) => ({ kind: "tenants delete", url, name: args[0]! }),
  async run(cmd, { admin, out }) {
    await admin.deleteTenant(cmd.name);
    await out.write(`Deleted tenant ${cmd.name}.\n`);
  },
});

export const namespacesList = defineCommand<Extract<TenantsCommand, { kind: "namespaces list" }>>({
  name: "namespaces list",
  usage: "  namespaces list TENANT [--json]\n",
  options: JSON_OPTIONS,
  args: ["TENANT"],
  parse: ({ url, args, values }) => ({ kind: "namespaces list", url, tenant: args[0]!, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const namespaces = await admin.listNamespaces(cmd.tenant);
    await out.write(cmd.json ? `${JSON.stringify(namespaces, null, 2)}\n` : namespaces.map((n) => `${n}\n`).join(""));
  },
});

export const namespacesCreate = defineCommand<Extract<TenantsCommand, { kind: "namespaces create" }>>({
  name: "namespaces create",
  usage: "  namespaces create TENANT/NAMESPACE [--if-not-exists]\n",
  options: { "if-not-exists": { type: "boolean" } },
  args: ["TENANT/NAMESPACE"],
  parse: ({ url, args, values }) => ({ kind: "namespaces create", url, namespace: namespaceArg(args[0]!), ifNotExists: flag(values, "if-not-exists") || undefined }),
  async run(cmd, { admin, out }) {
    try {
      await admin.createNamespace(cmd.namespace);
      await out.write(`Created namespace ${cmd.namespace}.\n`);
    } catch (e) {
      if (!(cmd.ifNotExists === true && e instanceof EdgelogError && e.code === "NAMESPACE_ALREADY_EXISTS")) throw e;
      await out.write(`Namespace ${cmd.namespace} already exists.\n`);
    }
  },
});

export const namespacesDescribe = defineCommand<Extract<TenantsCommand, { kind: "namespaces describe" }>>({
  name: "namespaces describe",
  usage: "  namespaces describe TENANT/NAMESPACE [--json]\n",
  options: JSON_OPTIONS,
  args: ["TENANT/NAMESPACE"],
  parse: ({ url, args, values }) => ({ kind: "namespaces describe", url, namespace: namespaceArg(args[0]!), json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const d = await admin.describeNamespace(cmd.namespace);
    if (cmd.json) return void (await out.write(`${JSON.stringify(d, null, 2)}\n`));
    const set = Object.entries(d.policies).map(([k, v]) => `${k}=${shown(v)}`);
    await out.write(`Namespace: ${d.name}\tTopics: ${d.topics}\nPolicies: ${set.join(", ") || "-"}\n`);
  },
});

export const namespacesDelete = defineCommand<Extract<TenantsCommand, { kind: "namespaces delete" }>>({
  name: "namespaces delete",
  usage: "  namespaces delete TENANT/NAMESPACE\n",
  options: {},
  args: ["TENANT/NAMESPACE"],
  parse: ({ url, args }) => ({ kind: "namespaces delete", url, namespace: namespaceArg(args[0]!) }),
  async run(cmd, { admin, out }) {
    await admin.deleteNamespace(cmd.namespace);
    await out.write(`Deleted namespace ${cmd.namespace}.\n`);
  },
});

export const namespacesSetPolicy = defineCommand<Extract<TenantsCommand, { kind: "namespaces set-policy" }>>({
  name: "namespaces set-policy",
  usage:
    "  namespaces set-policy TENANT/NAMESPACE POLICY VALUE...\n" +
    `      POLICY: ${POLICY_NAMES.join(" | ")}; VALUE: JSON, or field=value words\n` +
    "      (e.g. messageTtlSeconds 3600; backlogQuota limitBytes=1048576 action=producer_exception).\n",
  options: {},
  args: ["TENANT/NAMESPACE", "POLICY"],
  rest: "VALUE",
  parse: ({ url, args }) => ({
    kind: "namespaces set-policy",
    url,
    namespace: namespaceArg(args[0]!),
    policy: policyArg(args[1]!),
    value: policyValue(args.slice(2)),
  }),
  async run(cmd, { admin, out }) {
    const p = await admin.setNamespacePolicy(cmd.namespace, cmd.policy, cmd.value as TopicPolicies[PolicyName]);
    await out.write(`Set ${cmd.policy}=${shown(p[cmd.policy].value)} on ${cmd.namespace}.\n`);
  },
});

export const namespacesGetPolicies = defineCommand<Extract<TenantsCommand, { kind: "namespaces get-policies" }>>({
  name: "namespaces get-policies",
  usage: "  namespaces get-policies TENANT/NAMESPACE [--json]\n",
  options: JSON_OPTIONS,
  args: ["TENANT/NAMESPACE"],
  parse: ({ url, args, values }) => ({ kind: "namespaces get-policies", url, namespace: namespaceArg(args[0]!), json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const p = await admin.getNamespacePolicies(cmd.namespace);
    if (cmd.json) return void (await out.write(`${JSON.stringify(p, null, 2)}\n`));
    await out.write(
      formatTable(
        ["POLICY", "VALUE", "SOURCE"],
        Object.entries(p).map(([k, v]) => [k, shown(v.value), v.source]),
      ),
    );
  },
});

export const namespacesRemovePolicy = defineCommand<Extract<TenantsCommand, { kind: "namespaces remove-policy" }>>({
  name: "namespaces remove-policy",
  usage: "  namespaces remove-policy TENANT/NAMESPACE POLICY\n",
  options: {},
  args: ["TENANT/NAMESPACE", "POLICY"],
  parse: ({ url, args }) => ({ kind: "namespaces remove-policy", url, namespace: namespaceArg(args[0]!), policy: policyArg(args[1]!) }),
  async run(cmd, { admin, out }) {
    await admin.removeNamespacePolicy(cmd.namespace, cmd.policy);
    await out.write(`Removed ${cmd.policy} from ${cmd.namespace}: the default applies.\n`);
  },
});
