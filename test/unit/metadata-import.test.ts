/**
 * The import of MetadataDO's state into the metadata quorum, its pure parts
 * (src/metadata/import.ts): parts in dependency order, at most IMPORT_PART_ROWS rows each, then
 * the producer-id counter, then `importDone`; a stopped run proposes no `importDone`; a refused
 * proposal throws (the sweep runs it again); malformed parts are recognised; hex round trip.
 */
import { describe, expect, it } from "vitest";
import { fromHex, toHex } from "../../src/auth/hex.ts";
import type { MetadataAnswer, MetadataCommand, MetadataExport } from "../../src/metadata/commands.ts";
import { IMPORT_PART_ROWS, malformedImport, runMetadataImport } from "../../src/metadata/import.ts";

const topic = (i: number): MetadataExport["topics"][number] => ({
  name: `t/ns/x${i}`,
  tenant: "t",
  namespace: "ns",
  topic: `x${i}`,
  topic_id: `id-${i}`,
  partitions: 1,
  configs: "{}",
  created_at: 1,
  policies: "{}",
  config_keys: null,
});

const exported: MetadataExport = {
  tenants: [{ name: "t", allowed_clusters: '["edgelog"]', created_at: 1 }],
  namespaces: [{ name: "t/ns", tenant: "t", namespace: "ns", policies: "{}", created_at: 1 }],
  topics: Array.from({ length: IMPORT_PART_ROWS + 5 }, (_, i) => topic(i)),
  acls: [{ principal: "bob", resourceType: "topic", resourceName: "t/ns/x0", patternType: "literal", operation: "read", permission: "allow" }],
  users: [{ name: "carol", mechanism: "SCRAM-SHA-256", salt: "00ff", iterations: 4096, storedKey: "ab", serverKey: "cd", generation: "g1" }],
  quotas: [{ user: "carol", client_id: "", key: "producer_byte_rate", value: 10 }],
  lastProducerId: 41,
};

function recorder(refuse?: (c: MetadataCommand) => boolean) {
  const seen: MetadataCommand[] = [];
  const propose = async (c: MetadataCommand): Promise<MetadataAnswer> => {
    seen.push(c);
    if (refuse?.(c)) return { ok: false, code: "NOT_LEADER", message: "gone" };
    const part = c.type === "importMetadata" ? c.part : {};
    const rows = Object.values(part).reduce<number>((n, v) => n + (Array.isArray(v) ? v.length : 0), 0);
    return { ok: true, imported: rows };
  };
  return { seen, propose };
}

describe("runMetadataImport", () => {
  it("proposes parts in dependency order, bounded in rows, then the counter, then importDone", async () => {
    const { seen, propose } = recorder();
    const r = await runMetadataImport(exported, propose);
    const kinds = seen.map((c) => (c.type === "importMetadata" ? Object.keys(c.part).join() : c.type));
    expect(kinds).toEqual(["tenants", "namespaces", "topics", "topics", "acls", "users", "quotas", "lastProducerId", "importDone"]);
    const topicParts = seen.filter((c) => c.type === "importMetadata" && c.part.topics !== undefined) as Extract<MetadataCommand, { type: "importMetadata" }>[];
    expect(topicParts.map((c) => c.part.topics!.length)).toEqual([IMPORT_PART_ROWS, 5]);
    expect(r).toEqual({ parts: 8, imported: IMPORT_PART_ROWS + 5 + 5 });
    for (const c of seen) if (c.type === "importMetadata") expect(malformedImport(c.part)).toBeNull();
  });

  it("a run stopped half-way proposes no importDone; a refused part throws", async () => {
    const stopped = recorder();
    expect(await runMetadataImport(exported, stopped.propose, { stopAfterParts: 3 })).toMatchObject({ parts: 3 });
    expect(stopped.seen.map((c) => c.type)).toEqual(["importMetadata", "importMetadata", "importMetadata"]);
    const refused = recorder((c) => c.type === "importMetadata" && c.part.acls !== undefined);
    await expect(runMetadataImport(exported, refused.propose)).rejects.toThrow(/NOT_LEADER/);
    expect(refused.seen.some((c) => c.type === "importDone")).toBe(false);
  });
});

describe("malformedImport", () => {
  it("accepts an export's rows and refuses wrong shapes", () => {
    expect(malformedImport({})).toBeNull();
    expect(malformedImport(null)).not.toBeNull();
    expect(malformedImport({ topics: "x" })).not.toBeNull();
    expect(malformedImport({ topics: [{ ...topic(1), partitions: 0 }] })).not.toBeNull();
    expect(malformedImport({ users: [{ ...exported.users[0], salt: "xyz" }] })).not.toBeNull();
    expect(malformedImport({ users: [{ ...exported.users[0], mechanism: "MD5" }] })).not.toBeNull();
    expect(malformedImport({ quotas: [{ ...exported.quotas[0], value: "1" }] })).not.toBeNull();
    expect(malformedImport({ lastProducerId: 1.5 })).not.toBeNull();
  });
});

describe("fromHex", () => {
  it("inverts toHex and refuses what is not hex", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(33));
    expect(fromHex(toHex(bytes))).toEqual(bytes);
    expect(fromHex("")).toEqual(new Uint8Array(0));
    expect(() => fromHex("abc")).toThrow();
    expect(() => fromHex("zz")).toThrow();
  });
});
