/**
 * The one-time import of MetadataDO's state into the metadata quorum (docs/RAFT.md, "Migration
 * from MetadataDO"; KRaft's ZooKeeper-to-KRaft migration, KIP-866, in spirit): the leader's
 * sweep reads MetadataDO "cluster" (`exportMetadata`) and proposes its rows as
 * `importMetadata` records of at most {@link IMPORT_PART_ROWS} rows each, then `importDone`,
 * the marker after which no leader imports again. Each part adds only what the log has
 * nothing for, so a run that stopped half-way (a leader crash, a failed proposal) is completed
 * by the next leader's run from the start, adding each row once.
 */
import type { RpcResult } from "../protocol/errors.ts";
import type { MetadataAnswer, MetadataCommand, MetadataExport } from "./commands.ts";

/** What MetadataDO answers the import with (its rows; read-only). */
export interface MetadataExporter {
  exportMetadata(): Promise<RpcResult<{ export: MetadataExport }>>;
}

/** Rows per `importMetadata` record (a topic row is under 4 KiB: a part stays well under the 1 MiB proposal limit). */
export const IMPORT_PART_ROWS = 100;

/** The keys of an export, in the order they are imported (a topic's namespace before it, a namespace's tenant before it). */
const ORDER = ["tenants", "namespaces", "topics", "acls", "users", "quotas"] as const;

/**
 * Proposes the export as parts, then `importDone`.
 * @param options.stopAfterParts stop after this many parts, before `importDone` (a test's crash half-way)
 * @throws Error when a proposal is refused (the import is then run again by the next sweep)
 */
export async function runMetadataImport(
  exported: MetadataExport,
  propose: (c: MetadataCommand) => Promise<MetadataAnswer>,
  options: { stopAfterParts?: number } = {},
): Promise<{ parts: number; imported: number }> {
  let parts = 0;
  let imported = 0;
  const send = async (part: Partial<MetadataExport>): Promise<boolean> => {
    if (options.stopAfterParts !== undefined && parts >= options.stopAfterParts) return false;
    const r = await propose({ type: "importMetadata", part });
    if (!r.ok) throw new Error(`importMetadata refused: ${r.code}: ${r.message}`);
    parts++;
    imported += r.imported ?? 0;
    return true;
  };
  for (const key of ORDER) {
    const rows = exported[key] as unknown[];
    for (let i = 0; i < rows.length; i += IMPORT_PART_ROWS) {
      if (!(await send({ [key]: rows.slice(i, i + IMPORT_PART_ROWS) }))) return { parts, imported };
    }
  }
  if (!(await send({ lastProducerId: exported.lastProducerId }))) return { parts, imported };
  const done = await propose({ type: "importDone" });
  if (!done.ok) throw new Error(`importDone refused: ${done.code}: ${done.message}`);
  return { parts, imported };
}

const str = (v: unknown) => typeof v === "string";
const int = (v: unknown) => Number.isSafeInteger(v);
const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Per key, the fields a row must have and their checks. */
const ROW_CHECKS: Record<(typeof ORDER)[number], Record<string, (v: unknown) => boolean>> = {
  tenants: { name: str, allowed_clusters: str, created_at: int },
  namespaces: { name: str, tenant: str, namespace: str, policies: str, created_at: int },
  topics: {
    name: str,
    tenant: str,
    namespace: str,
    topic: str,
    topic_id: str,
    partitions: (v) => int(v) && (v as number) >= 1,
    configs: str,
    created_at: int,
    policies: str,
    config_keys: (v) => v === null || str(v),
  },
  acls: { principal: str, resourceType: str, resourceName: str, patternType: str, operation: str, permission: str },
  users: {
    name: str,
    mechanism: (v) => v === "SCRAM-SHA-256" || v === "SCRAM-SHA-512",
    salt: (v) => str(v) && /^(?:[0-9a-f]{2})+$/.test(v as string),
    iterations: (v) => int(v) && (v as number) > 0,
    storedKey: (v) => str(v) && /^(?:[0-9a-f]{2})+$/.test(v as string),
    serverKey: (v) => str(v) && /^(?:[0-9a-f]{2})+$/.test(v as string),
    generation: str,
  },
  quotas: { user: str, client_id: str, key: str, value: (v) => typeof v === "number" && Number.isFinite(v) },
};

/**
 * The shape of an `importMetadata` part, checked before it is applied (a malformed part changes
 * nothing, on every member alike: a throw at apply would stop every member).
 * @returns what is wrong, or null
 */
export function malformedImport(part: unknown): string | null {
  if (!obj(part)) return "importMetadata needs {part}";
  for (const key of ORDER) {
    const rows = part[key];
    if (rows === undefined) continue;
    if (!Array.isArray(rows)) return `importMetadata: ${key} must be an array`;
    const checks = ROW_CHECKS[key];
    for (const r of rows) {
      if (!obj(r) || !Object.entries(checks).every(([f, ok]) => ok(r[f]))) return `importMetadata: a malformed row of ${key}`;
    }
  }
  if (part.lastProducerId !== undefined && part.lastProducerId !== null && !int(part.lastProducerId)) return "importMetadata: lastProducerId must be an integer or null";
  return null;
}
