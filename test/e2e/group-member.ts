/**
 * One consumer-group member as its own process, for test/e2e/groups.test.ts (so a test can
 * SIGKILL it like a crash). Uses the SDK's GroupConsumer and prints one JSON line per event on
 * stdout: {"ev":"msg","p","o"} after each processed message, {"ev":"commit","offsets"} after
 * each acknowledged commit, {"ev":"assigned"|"revoked"|"lost","partitions"}, {"ev":"error"}.
 * SIGTERM disconnects gracefully (commit, leave) and exits 0.
 *
 * Usage: node test/e2e/group-member.ts BASE_URL GROUP TOPIC NAME [DELAY_MS] [SESSION_TIMEOUT_MS] [AUTO_COMMIT_MS]
 */
import process from "node:process";
import { EdgelogClient, GroupConsumer } from "../../sdk/src/index.ts";

const [baseUrl, group, topic, name, delay = "0", session = "3000", autoCommit = "500"] = process.argv.slice(2);
if (baseUrl === undefined || group === undefined || topic === undefined || name === undefined) {
  process.stderr.write("usage: group-member.ts BASE_URL GROUP TOPIC NAME [DELAY_MS] [SESSION_TIMEOUT_MS] [AUTO_COMMIT_MS]\n");
  process.exit(2);
}
const delayMs = Number(delay);
const emit = (o: Record<string, unknown>): void => {
  process.stdout.write(`${JSON.stringify({ name, t: Date.now(), ...o })}\n`);
};

const consumer = new GroupConsumer(new EdgelogClient({ baseUrl }), { groupId: group, clientId: name, sessionTimeoutMs: Number(session) });
consumer.on("assigned", (partitions) => emit({ ev: "assigned", partitions }));
consumer.on("revoked", (partitions) => emit({ ev: "revoked", partitions }));
consumer.on("lost", (partitions) => emit({ ev: "lost", partitions }));
consumer.on("commit", (offsets) => emit({ ev: "commit", offsets }));
consumer.on("error", (e) => emit({ ev: "error", message: e instanceof Error ? e.message : String(e), code: (e as { code?: unknown }).code ?? null }));
await consumer.subscribe({ topics: [topic], fromBeginning: true });
emit({ ev: "member", memberId: consumer.membership().memberId });
await consumer.run({
  autoCommitIntervalMs: Number(autoCommit),
  eachMessage: async ({ partition, message }) => {
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    emit({ ev: "msg", p: partition, o: message.offset });
  },
});

process.once("SIGTERM", () => {
  void consumer.disconnect().then(() => {
    emit({ ev: "closed" });
    process.exit(0);
  });
});
