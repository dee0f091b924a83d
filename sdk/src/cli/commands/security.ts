/**
 * Security commands (docs/SECURITY.md): `acls add | list | remove` (kafka-acls), `users create |
 * delete | list` (kafka-configs --entity-type users, SCRAM), `quotas list | alter` (kafka-configs
 * client quotas), and `token issue` (an HS256 token signed locally, for development).
 */
import { SignJWT } from "jose";
import type { NewAcl } from "../../admin.ts";
import type { AclFilter } from "../../../../src/protocol/acl.ts";
import { flag, intOption, list, str, UsageError } from "../args.ts";
import { defineCommand } from "../command.ts";
import { formatTable } from "../format.ts";

const JSON_OPTION = { json: { type: "boolean" } } as const;
const FILTER_OPTIONS = {
  principal: { type: "string" },
  "resource-type": { type: "string" },
  "resource-name": { type: "string" },
  "pattern-type": { type: "string" },
  operation: { type: "string" },
  permission: { type: "string" },
} as const;

export type SecurityCommand =
  | { kind: "acls list"; url: string; filter: AclFilter; json: boolean }
  | { kind: "acls add"; url: string; acl: NewAcl }
  | { kind: "acls remove"; url: string; filter: AclFilter }
  | { kind: "users create"; url: string; name: string; password: string; mechanism: "SCRAM-SHA-256" | "SCRAM-SHA-512" | undefined; iterations: number | undefined }
  | { kind: "users delete"; url: string; name: string }
  | { kind: "users list"; url: string; json: boolean }
  | { kind: "quotas list"; url: string; json: boolean }
  | { kind: "quotas alter"; url: string; user: string | undefined; clientId: string | undefined; values: Record<string, number | null> }
  | { kind: "token issue"; url: string; sub: string; ttlSec: number; aud: string | undefined; iss: string | undefined };

type Values = Readonly<Record<string, string | boolean | (string | boolean)[] | undefined>>;

function filterOf(values: Values): AclFilter {
  const f: Record<string, string> = {};
  for (const [opt, field] of [
    ["principal", "principal"],
    ["resource-type", "resourceType"],
    ["resource-name", "resourceName"],
    ["pattern-type", "patternType"],
    ["operation", "operation"],
    ["permission", "permission"],
  ] as const) {
    const v = str(values, opt);
    if (v !== undefined) f[field] = v;
  }
  return f as AclFilter;
}

export const aclsList = defineCommand<Extract<SecurityCommand, { kind: "acls list" }>>({
  name: "acls list",
  usage: "  acls list [--principal P] [--resource-type T] [--resource-name N] [--pattern-type literal|prefixed] [--operation OP] [--permission allow|deny] [--json]\n",
  options: { ...FILTER_OPTIONS, ...JSON_OPTION },
  args: [],
  parse: ({ url, values }) => ({ kind: "acls list", url, filter: filterOf(values), json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const acls = await admin.listAcls(cmd.filter);
    if (cmd.json) return void (await out.write(`${JSON.stringify(acls, null, 2)}\n`));
    await out.write(
      formatTable(
        ["PRINCIPAL", "RESOURCE-TYPE", "RESOURCE-NAME", "PATTERN", "OPERATION", "PERMISSION"],
        acls.map((a) => [`User:${a.principal}`, a.resourceType, a.resourceName, a.patternType, a.operation, a.permission]),
      ),
    );
  },
});

export const aclsAdd = defineCommand<Extract<SecurityCommand, { kind: "acls add" }>>({
  name: "acls add",
  usage: "  acls add --principal P --resource-type T --resource-name N --operation OP [--pattern-type prefixed] [--permission deny]\n",
  options: FILTER_OPTIONS,
  args: [],
  parse: ({ url, values }) => {
    const f = filterOf(values);
    if (f.principal === undefined || f.resourceType === undefined || f.operation === undefined) throw new UsageError("acls add: --principal, --resource-type and --operation are required");
    if (f.resourceName === undefined && f.resourceType !== "cluster") throw new UsageError("acls add: --resource-name is required");
    return { kind: "acls add", url, acl: { ...f, resourceName: f.resourceName ?? "kafka-cluster" } as NewAcl };
  },
  async run(cmd, { admin, out }) {
    const r = await admin.createAcls([cmd.acl]);
    await out.write(r.created === 1 ? "Added 1 ACL.\n" : "The ACL already existed.\n");
  },
});

export const aclsRemove = defineCommand<Extract<SecurityCommand, { kind: "acls remove" }>>({
  name: "acls remove",
  usage: "  acls remove [filters as acls list; at least one]\n",
  options: FILTER_OPTIONS,
  args: [],
  parse: ({ url, values }) => {
    const filter = filterOf(values);
    if (Object.keys(filter).length === 0) throw new UsageError("acls remove: give at least one filter");
    return { kind: "acls remove", url, filter };
  },
  async run(cmd, { admin, out }) {
    const deleted = await admin.deleteAcls(cmd.filter);
    await out.write(`Removed ${deleted.length} ACL${deleted.length === 1 ? "" : "s"}.\n`);
  },
});

const MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const;

export const usersCreate = defineCommand<Extract<SecurityCommand, { kind: "users create" }>>({
  name: "users create",
  usage: "  users create NAME --password P [--mechanism SCRAM-SHA-256|SCRAM-SHA-512] [--iterations N]   (also sets a new password)\n",
  options: { password: { type: "string" }, mechanism: { type: "string" }, iterations: { type: "string" } },
  args: ["NAME"],
  parse: ({ url, args, values }) => {
    const password = str(values, "password");
    if (password === undefined || password === "") throw new UsageError("users create: --password is required");
    const m = str(values, "mechanism")?.toUpperCase();
    if (m !== undefined && !(MECHANISMS as readonly string[]).includes(m)) throw new UsageError(`users create: --mechanism must be ${MECHANISMS.join(" or ")}`);
    return { kind: "users create", url, name: args[0]!, password, mechanism: m as (typeof MECHANISMS)[number] | undefined, iterations: intOption("--iterations", str(values, "iterations")) };
  },
  async run(cmd, { admin, out }) {
    const u = await admin.upsertUser(cmd.name, cmd.password, {
      ...(cmd.mechanism ? { mechanism: cmd.mechanism } : {}),
      ...(cmd.iterations !== undefined ? { iterations: cmd.iterations } : {}),
    });
    await out.write(`User ${u.name}: ${u.mechanisms.map((m) => `${m.mechanism} (${m.iterations} iterations)`).join(", ")}.\n`);
  },
});

export const usersDelete = defineCommand<Extract<SecurityCommand, { kind: "users delete" }>>({
  name: "users delete",
  usage: "  users delete NAME\n",
  options: {},
  args: ["NAME"],
  parse: ({ url, args }) => ({ kind: "users delete", url, name: args[0]! }),
  async run(cmd, { admin, out }) {
    await admin.deleteUser(cmd.name);
    await out.write(`Deleted user ${cmd.name}.\n`);
  },
});

export const usersList = defineCommand<Extract<SecurityCommand, { kind: "users list" }>>({
  name: "users list",
  usage: "  users list [--json]\n",
  options: JSON_OPTION,
  args: [],
  parse: ({ url, values }) => ({ kind: "users list", url, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const users = await admin.listUsers();
    if (cmd.json) return void (await out.write(`${JSON.stringify(users, null, 2)}\n`));
    await out.write(
      formatTable(
        ["USER", "MECHANISMS"],
        users.map((u) => [u.name, u.mechanisms.map((m) => `${m.mechanism}:${m.iterations}`).join(" ")]),
      ),
    );
  },
});

export const quotasList = defineCommand<Extract<SecurityCommand, { kind: "quotas list" }>>({
  name: "quotas list",
  usage: "  quotas list [--json]\n",
  options: JSON_OPTION,
  args: [],
  parse: ({ url, values }) => ({ kind: "quotas list", url, json: flag(values, "json") }),
  async run(cmd, { admin, out }) {
    const quotas = await admin.describeQuotas();
    if (cmd.json) return void (await out.write(`${JSON.stringify(quotas, null, 2)}\n`));
    const v = (n: number | undefined) => (n === undefined ? "-" : String(n));
    await out.write(
      formatTable(
        ["USER", "CLIENT-ID", "PRODUCER-BYTE-RATE", "CONSUMER-BYTE-RATE", "REQUEST-RATE"],
        quotas.map((q) => [q.user ?? "-", q.clientId ?? "-", v(q.values.producer_byte_rate), v(q.values.consumer_byte_rate), v(q.values.request_rate)]),
      ),
    );
  },
});

const QUOTA_OPTIONS = {
  "entity-user": { type: "string" },
  "entity-client-id": { type: "string" },
  "producer-byte-rate": { type: "string" },
  "consumer-byte-rate": { type: "string" },
  "request-rate": { type: "string" },
  remove: { type: "string", multiple: true },
} as const;

export const quotasAlter = defineCommand<Extract<SecurityCommand, { kind: "quotas alter" }>>({
  name: "quotas alter",
  usage: "  quotas alter [--entity-user U|<default>] [--entity-client-id C|<default>] [--producer-byte-rate N] [--consumer-byte-rate N] [--request-rate N] [--remove KEY ...]\n",
  options: QUOTA_OPTIONS,
  args: [],
  parse: ({ url, values }) => {
    const user = str(values, "entity-user");
    const clientId = str(values, "entity-client-id");
    if (user === undefined && clientId === undefined) throw new UsageError("quotas alter: give --entity-user and/or --entity-client-id");
    const out: Record<string, number | null> = {};
    for (const key of ["producer-byte-rate", "consumer-byte-rate", "request-rate"] as const) {
      const raw = str(values, key);
      if (raw === undefined) continue;
      const n = Number(raw);
      if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${key} must be a positive number, got ${JSON.stringify(raw)}`);
      out[key.replaceAll("-", "_")] = n;
    }
    for (const key of list(values, "remove") ?? []) {
      const k = key.replaceAll("-", "_");
      if (!["producer_byte_rate", "consumer_byte_rate", "request_rate"].includes(k)) throw new UsageError(`--remove: unknown quota ${JSON.stringify(key)}`);
      out[k] = null;
    }
    if (Object.keys(out).length === 0) throw new UsageError("quotas alter: nothing to change");
    return { kind: "quotas alter", url, user, clientId, values: out };
  },
  async run(cmd, { admin, out }) {
    const q = await admin.alterQuotas({ ...(cmd.user !== undefined ? { user: cmd.user } : {}), ...(cmd.clientId !== undefined ? { clientId: cmd.clientId } : {}) }, cmd.values);
    await out.write(`${JSON.stringify(q)}\n`);
  },
});

/** `1h`, `30m`, `45s`, `2d` or seconds. */
function durationSec(raw: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(raw);
  if (m === null) throw new UsageError(`--ttl must be like 3600, 45s, 30m, 1h or 2d; got ${JSON.stringify(raw)}`);
  const n = Number(m[1]) * ({ "": 1, s: 1, m: 60, h: 3600, d: 86400 } as Record<string, number>)[m[2]!]!;
  if (n < 1) throw new UsageError("--ttl must be at least 1 s");
  return n;
}

export const tokenIssue = defineCommand<Extract<SecurityCommand, { kind: "token issue" }>>({
  name: "token issue",
  usage: "  token issue --sub NAME [--ttl 1h] [--aud A] [--iss I]   (HS256, secret from $EDGELOG_JWT_SECRET; development)\n",
  options: { sub: { type: "string" }, ttl: { type: "string" }, aud: { type: "string" }, iss: { type: "string" } },
  args: [],
  parse: ({ url, values }) => {
    const sub = str(values, "sub");
    if (sub === undefined || sub === "") throw new UsageError("token issue: --sub is required");
    return { kind: "token issue", url, sub, ttlSec: durationSec(str(values, "ttl") ?? "1h"), aud: str(values, "aud"), iss: str(values, "iss") };
  },
  async run(cmd, { io, out }) {
    const secret = io.env["EDGELOG_JWT_SECRET"];
    if (secret === undefined || secret === "") throw new UsageError("token issue: set EDGELOG_JWT_SECRET (the gateway's HS256 secret)");
    let jwt = new SignJWT({}).setProtectedHeader({ alg: "HS256", typ: "JWT" }).setSubject(cmd.sub).setIssuedAt().setExpirationTime(`${cmd.ttlSec}s`);
    if (cmd.aud !== undefined) jwt = jwt.setAudience(cmd.aud);
    if (cmd.iss !== undefined) jwt = jwt.setIssuer(cmd.iss);
    await out.write(`${await jwt.sign(new TextEncoder().encode(secret))}\n`);
  },
});
