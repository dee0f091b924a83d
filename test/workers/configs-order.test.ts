/**
 * Config pushes carry their record index (docs/RAFT.md "Config pushes carry their record
 * index"; src/partition/configs-order.ts): a push older than the configs a partition holds is
 * answered ok with `stale: true` and changes nothing, on factor 1 and on factor 3 (where the
 * rule runs at apply on every replica). Directly through the partition RPC (at r1 and, on
 * factor 3, at a follower that forwards), and through the metadata quorum's task runner
 * (`runLifecycleTask`) with an older task after the store's newer alter was pushed.
 */
import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import type { LifecycleTask } from "../../src/metadata/commands.ts";
import { runLifecycleTask } from "../../src/metadata/lifecycle.ts";
import { RaftMetadataStore } from "../../src/metadata/raft-store.ts";
import type { TopicConfigs } from "../../src/protocol/types.ts";
import { raftMemberName, type RaftMemberRpc } from "../../src/raft/group.ts";
import { createTopic, randomTopic } from "./helpers.ts";
import { replica, until } from "./replica-helpers.ts";

const started: string[] = [];
const groups: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).flatMap((topicId) => ["r1", "r2", "r3"].map((id) => replica(topicId, id).setFaults({ crashed: true }))));
  await Promise.all(groups.splice(0).map((g) => (env.RAFT_MEMBER.get(env.RAFT_MEMBER.idFromName(raftMemberName(g, "m1"))) as unknown as RaftMemberRpc).setFaults({ crashed: true })));
});

/** A replica's stored configs and their metadata offset (meta rows `configs`, `configs_offset`). */
async function held(topicId: string, id: string): Promise<{ configs: TopicConfigs; offset: number | null }> {
  return runInDurableObject(replica(topicId, id) as unknown as DurableObjectStub, (_o, state) => {
    const rows = state.storage.sql.exec<{ key: string; value: string | number }>("SELECT key, value FROM meta WHERE key IN ('configs', 'configs_offset')").toArray();
    const m = new Map(rows.map((r) => [r.key, r.value]));
    return { configs: JSON.parse(String(m.get("configs"))) as TopicConfigs, offset: m.has("configs_offset") ? Number(m.get("configs_offset")) : null };
  });
}

const replicasOf = (rf: number) => ["r1", "r2", "r3"].slice(0, rf);

/** Waits until every replica holds retention.ms `retention` at metadata offset `offset`. */
async function allHold(topicId: string, rf: number, retention: number, offset: number | null): Promise<void> {
  for (const id of replicasOf(rf)) {
    await until(`${id} holds retention.ms ${retention} at offset ${offset}`, async () => {
      const h = await held(topicId, id);
      return h.configs["retention.ms"] === retention && h.offset === offset ? true : undefined;
    });
  }
}

for (const rf of [1, 3]) {
  describe(`replication.factor ${rf}`, () => {
    it("an older push after a newer one is answered stale and the newer configs are kept", async () => {
      const d = await createTopic(randomTopic("cfgord"), 1, { "replication.factor": rf });
      started.push(d.topicId);
      const base = (await held(d.topicId, "r1")).configs;
      expect((await held(d.topicId, "r1")).offset).toBeNull();
      const newer = { ...base, "retention.ms": 222_000_000 };
      const older = { ...base, "retention.ms": 111_000_000 };
      expect(await replica(d.topicId, "r1").updateConfigs(newer, false, 20)).toEqual({ ok: true });
      await allHold(d.topicId, rf, 222_000_000, 20);
      // The older one, at r1 and (factor 3) at a follower, which forwards it to the leader.
      for (const id of replicasOf(rf)) expect(await replica(d.topicId, id).updateConfigs(older, false, 10)).toEqual({ ok: true, stale: true });
      // The same offset again applies (idempotent); a push without an offset (MetadataDO) applies and keeps the held offset.
      expect(await replica(d.topicId, "r1").updateConfigs({ ...newer, "retention.ms": 333_000_000 }, false, 20)).toEqual({ ok: true });
      await allHold(d.topicId, rf, 333_000_000, 20);
      expect(await replica(d.topicId, "r1").updateConfigs({ ...newer, "retention.ms": 444_000_000 })).toEqual({ ok: true });
      await allHold(d.topicId, rf, 444_000_000, 20);
      // Still ignored after all that.
      expect(await replica(d.topicId, "r1").updateConfigs(older, false, 19)).toEqual({ ok: true, stale: true });
      await allHold(d.topicId, rf, 444_000_000, 20);
    });

    it("through the quorum's task runner: an older task run after the alter's push leaves the newer configs", async () => {
      const groupId = `cfgord-${crypto.randomUUID().slice(0, 8)}`;
      groups.push(groupId);
      const store = new RaftMetadataStore(env, [{ id: "m1" }], { groupId, tickMs: 50, electionTicks: 10 });
      const name = `cfgord-${crypto.randomUUID().slice(0, 8)}`;
      const created = await store.createTopic({ name, partitions: 1, configs: { "replication.factor": rf } });
      if (!created.ok) throw new Error(JSON.stringify(created));
      const topicId = created.topic.topicId;
      started.push(topicId);
      const altered = await store.alterTopic(name, { configs: { "retention.ms": 222_000_000 } });
      if (!altered.ok) throw new Error(JSON.stringify(altered));
      const at = altered.metadataOffset!;
      expect(at).toBeGreaterThan(created.metadataOffset!);
      await allHold(topicId, rf, 222_000_000, at);
      // The task of an older record (the create's, with its configs) run late, e.g. by the sweep.
      const configs = { ...(await held(topicId, "r1")).configs, "retention.ms": 111_000_000 };
      const task: LifecycleTask = { action: "sync", topicId, name: created.topic.topic, initFrom: 1, pushConfigs: true, partitions: 1, configs, recordIndex: at - 1 };
      await runLifecycleTask(env.PARTITION, task);
      await allHold(topicId, rf, 222_000_000, at);
      // A newer task applies.
      await runLifecycleTask(env.PARTITION, { ...task, configs: { ...configs, "retention.ms": 555_000_000 }, recordIndex: at + 1 });
      await allHold(topicId, rf, 555_000_000, at + 1);
    });
  });
}
