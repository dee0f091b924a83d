/**
 * A topic's subscriptions (Pulsar's model; docs/PROTOCOL.md "Subscriptions"), a section of the
 * topic page: each subscription's backlog (messages and bytes), consumers, unacked messages and
 * rates, summed over the partitions, sampled every {@link SUBSCRIPTION_SAMPLE_MS}; and for one
 * subscription its partitions and consumers (permits, unacked) with the admin actions: create,
 * skip N, clear backlog, reset the cursor (earliest, latest, timestamp) and delete (refused
 * with SUBSCRIPTION_HAS_CONSUMERS while consumers are connected; force then offered).
 */
import { useState } from "preact/hooks";
import type { SubscriptionInfo } from "../../subscriptions/rpc.ts";
import { ApiError, api, topicPath } from "./api.ts";
import { ConfirmDialog, ErrorBox, useAction, useApi } from "./components.tsx";
import { bytesText, num, rateText } from "./format.ts";

/** How often the section lists the subscriptions (the stats are the partitions' own, no scrape). */
export const SUBSCRIPTION_SAMPLE_MS = 3000;

/** One subscription summed over the topic's partitions, as the admin routes answer it. */
export interface SubscriptionSummary {
  topic: string;
  subscription: string;
  type: string | null;
  backlog: number;
  backlogBytes: number;
  unacked: number;
  deadLetteredTotal: number;
  msgRateIn: number;
  msgRateOut: number;
  msgRateRedeliver: number;
  consumers: number;
  partitions: SubscriptionInfo[];
}

const subPath = (topic: string, sub: string) => `${topicPath(topic)}/subscriptions/${encodeURIComponent(sub)}`;

export function SubscriptionsSection({ topic, partitions }: { topic: string; partitions: number }) {
  const list = useApi((signal) => api<{ subscriptions: SubscriptionSummary[] }>(`${topicPath(topic)}/subscriptions`, { signal }), [topic], SUBSCRIPTION_SAMPLE_MS);
  const [selected, setSelected] = useState<string | null>(null);
  const subs = list.data?.subscriptions ?? [];
  const current = subs.find((s) => s.subscription === selected);
  return (
    <section aria-labelledby="subscriptions-title">
      <div class="toolbar">
        <h2 id="subscriptions-title">Subscriptions</h2>
        <button type="button" onClick={list.reload}>
          Refresh subscriptions
        </button>
      </div>
      <ErrorBox error={list.error} what="Listing subscriptions" />
      {list.data !== undefined && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Subscriptions of this topic with their backlog, consumers, unacked messages and rates, over all partitions</caption>
            <thead>
              <tr>
                <th scope="col">Subscription</th>
                <th scope="col">Type</th>
                <th scope="col" class="num">
                  Backlog
                </th>
                <th scope="col" class="num wide-only">
                  Backlog size
                </th>
                <th scope="col" class="num">
                  Consumers
                </th>
                <th scope="col" class="num">
                  Unacked
                </th>
                <th scope="col" class="num wide-only">
                  Out
                </th>
                <th scope="col" class="num wide-only">
                  Redelivered
                </th>
                <th scope="col" class="num wide-only">
                  Dead-lettered
                </th>
              </tr>
            </thead>
            <tbody>
              {subs.map((s) => (
                <tr key={s.subscription}>
                  <th scope="row">
                    <button
                      type="button"
                      class="link"
                      aria-expanded={s.subscription === selected}
                      aria-label={`Manage subscription ${s.subscription}`}
                      onClick={() => setSelected(s.subscription === selected ? null : s.subscription)}
                    >
                      {s.subscription}
                    </button>
                  </th>
                  <td>{s.type ?? "–"}</td>
                  <td class="num" data-testid={`backlog-${s.subscription}`}>
                    {num(s.backlog)}
                  </td>
                  <td class="num wide-only">{bytesText(s.backlogBytes)}</td>
                  <td class="num">{num(s.consumers)}</td>
                  <td class="num" data-testid={`unacked-${s.subscription}`}>
                    {num(s.unacked)}
                  </td>
                  <td class="num wide-only">{rateText(s.msgRateOut, "msg")}</td>
                  <td class="num wide-only">{rateText(s.msgRateRedeliver, "msg")}</td>
                  <td class="num wide-only">{num(s.deadLetteredTotal)}</td>
                </tr>
              ))}
              {subs.length === 0 && (
                <tr>
                  <td colSpan={9} class="muted">
                    No subscriptions.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      <p class="muted small">
        Backlog: messages not yet acknowledged between the log start and the log end (Pulsar's msgBacklog). Rates are the partitions' own, over their last 10 s. Refreshed every{" "}
        {SUBSCRIPTION_SAMPLE_MS / 1000} s. Choose a subscription to see its consumers and manage it.
      </p>
      {current !== undefined && (
        <ManageSubscription key={current.subscription} topic={topic} partitions={partitions} sub={current} onChange={list.reload} onDeleted={() => setSelected(null)} />
      )}
      <CreateSubscription
        topic={topic}
        onCreated={(name) => {
          setSelected(name);
          list.reload();
        }}
      />
    </section>
  );
}

type Confirming = null | "clear" | "delete" | "force";

function ManageSubscription({ topic, partitions, sub, onChange, onDeleted }: { topic: string; partitions: number; sub: SubscriptionSummary; onChange: () => void; onDeleted: () => void }) {
  const name = sub.subscription;
  const path = subPath(topic, name);
  const [count, setCount] = useState("1");
  const [partition, setPartition] = useState("0");
  const [to, setTo] = useState<"earliest" | "latest" | "timestamp">("earliest");
  const [time, setTime] = useState("");
  const [confirming, setConfirming] = useState<Confirming>(null);
  const [done, setDone] = useState("");
  const [refusedForConsumers, setRefusedForConsumers] = useState(false);
  const skip = useAction();
  const clear = useAction();
  const reset = useAction();
  const del = useAction();
  const consumers = sub.partitions.flatMap((p) => p.consumers.map((c) => ({ ...c, partition: p.partition })));
  const remove = (force: boolean) =>
    void del.run(async () => {
      setDone("");
      try {
        await api(`${path}${force ? "?force=true" : ""}`, { method: "DELETE" });
      } catch (e) {
        // The API refuses while consumers are connected: its code stays shown, and force is offered.
        if (!force && e instanceof ApiError && e.code === "SUBSCRIPTION_HAS_CONSUMERS") setRefusedForConsumers(true);
        throw e;
      }
      onDeleted();
      onChange();
    });
  const titleId = `manage-${name}-title`;
  return (
    <section aria-labelledby={titleId} class="card">
      <h3 id={titleId}>Subscription {name}</h3>
      <p class="small" role="status">
        {done}
      </p>
      <div class="table-wrap">
        <table>
          <caption class="sr-only">Subscription {name} by partition</caption>
          <thead>
            <tr>
              <th scope="col">Partition</th>
              <th scope="col" class="num">
                Mark-delete position
              </th>
              <th scope="col" class="num">
                Backlog
              </th>
              <th scope="col" class="num">
                Unacked
              </th>
              <th scope="col" class="num">
                Consumers
              </th>
            </tr>
          </thead>
          <tbody>
            {sub.partitions.map((p) => (
              <tr key={p.partition}>
                <th scope="row">{p.partition}</th>
                <td class="num">{p.markDeletePosition < 0 ? "none" : num(p.markDeletePosition)}</td>
                <td class="num">{num(p.backlog)}</td>
                <td class="num">{num(p.unacked)}</td>
                <td class="num">{p.consumers.length}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h4>Consumers</h4>
      {consumers.length === 0 ? (
        <p class="muted">No consumers connected.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Consumers of subscription {name}</caption>
            <thead>
              <tr>
                <th scope="col">Consumer</th>
                <th scope="col" class="num">
                  Partition
                </th>
                <th scope="col">Active</th>
                <th scope="col" class="num">
                  Permits
                </th>
                <th scope="col" class="num">
                  Unacked
                </th>
              </tr>
            </thead>
            <tbody>
              {consumers.map((c) => (
                <tr key={`${c.partition}/${c.consumerId}`}>
                  <th scope="row">
                    {c.consumerName}
                    {c.consumerName !== c.consumerId && <span class="muted small"> ({c.consumerId})</span>}
                  </th>
                  <td class="num">{c.partition}</td>
                  <td>{c.active ? "yes" : "standby"}</td>
                  <td class="num">{num(c.permits)}</td>
                  <td class="num">{num(c.unacked)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}

      <form
        onSubmit={(e) => {
          e.preventDefault();
          setDone("");
          void skip.run(async () => {
            const r = await api<{ skipped: number }>(`${path}/skip`, { method: "POST", body: { count: Number(count), partition: Number(partition) } });
            setDone(`Skipped ${num(r.skipped)} message${r.skipped === 1 ? "" : "s"}.`);
            onChange();
          });
        }}
      >
        <h4>Skip messages</h4>
        <div class="row">
          <label>
            Messages to skip
            <input type="number" min={1} required value={count} onInput={(e) => setCount(e.currentTarget.value)} />
          </label>
          {partitions > 1 && (
            <label>
              Partition
              <select value={partition} onChange={(e) => setPartition(e.currentTarget.value)}>
                {Array.from({ length: partitions }, (_, p) => (
                  <option key={p} value={String(p)}>
                    {p}
                  </option>
                ))}
              </select>
            </label>
          )}
        </div>
        <button type="submit" disabled={skip.busy}>
          Skip
        </button>
      </form>
      <ErrorBox error={skip.error} what="Skip" />

      <form
        onSubmit={(e) => {
          e.preventDefault();
          setDone("");
          void reset.run(async () => {
            const body = to === "timestamp" ? { timestamp: new Date(time).getTime() } : { position: to };
            await api(`${path}/seek`, { method: "POST", body });
            setDone(`Cursor reset to ${to === "timestamp" ? new Date(time).toISOString() : to}.`);
            onChange();
          });
        }}
      >
        <h4>Reset the cursor</h4>
        <p class="muted small">Connected consumers are disconnected (close code 4002) and resume from the new position when they reconnect.</p>
        <div class="row">
          <label>
            Reset to
            <select value={to} onChange={(e) => setTo(e.currentTarget.value as typeof to)}>
              <option value="earliest">Earliest</option>
              <option value="latest">Latest</option>
              <option value="timestamp">Timestamp</option>
            </select>
          </label>
          {to === "timestamp" && (
            <label>
              Time (your local time)
              <input type="datetime-local" step={1} required value={time} onInput={(e) => setTime(e.currentTarget.value)} />
            </label>
          )}
        </div>
        <button type="submit" disabled={reset.busy}>
          Reset cursor
        </button>
      </form>
      <ErrorBox error={reset.error} what="Reset cursor" />

      <h4>Clear or delete</h4>
      <p>
        <button type="button" class="danger" disabled={clear.busy} onClick={() => setConfirming("clear")}>
          Clear backlog…
        </button>{" "}
        <button type="button" class="danger" disabled={del.busy} onClick={() => setConfirming("delete")}>
          Delete subscription…
        </button>{" "}
        {refusedForConsumers && (
          <button type="button" class="danger" disabled={del.busy} onClick={() => setConfirming("force")}>
            Force delete…
          </button>
        )}
      </p>
      <ErrorBox error={clear.error} what="Clear backlog" />
      <ErrorBox error={del.error} what="Delete subscription" />
      <ConfirmDialog
        open={confirming !== null}
        title={confirming === "clear" ? `Clear the backlog of ${name}?` : confirming === "force" ? `Force delete ${name}?` : `Delete subscription ${name}?`}
        expected={name}
        confirmLabel={confirming === "clear" ? "Clear backlog" : confirming === "force" ? "Force delete" : "Delete"}
        onCancel={() => setConfirming(null)}
        onConfirm={() => {
          const what = confirming;
          setConfirming(null);
          if (what === "clear") {
            setDone("");
            void clear.run(async () => {
              const r = await api<{ cleared: number }>(`${path}/clear-backlog`, { method: "POST" });
              setDone(`Cleared ${num(r.cleared)} message${r.cleared === 1 ? "" : "s"}.`);
              onChange();
            });
          } else if (what !== null) remove(what === "force");
        }}
      >
        {confirming === "clear" && <p>Every message of the backlog, on every partition, is acknowledged for this subscription: its consumers will not receive them.</p>}
        {confirming === "delete" && <p>The subscription's cursor is deleted on every partition. The API refuses while consumers are connected.</p>}
        {confirming === "force" && <p>Connected consumers are disconnected (close code 4001) and the cursor is deleted on every partition.</p>}
      </ConfirmDialog>
    </section>
  );
}

function CreateSubscription({ topic, onCreated }: { topic: string; onCreated: (name: string) => void }) {
  const [name, setName] = useState("");
  const [type, setType] = useState("exclusive");
  const [position, setPosition] = useState<"latest" | "earliest">("latest");
  const action = useAction();
  return (
    <form
      class="card"
      aria-labelledby="create-subscription-title"
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          await api(subPath(topic, name), { method: "PUT", body: { type, initialPosition: position } });
          onCreated(name);
          setName("");
        });
      }}
    >
      <h3 id="create-subscription-title">Create a subscription</h3>
      <div class="row">
        <label>
          Subscription name
          <input required value={name} onInput={(e) => setName(e.currentTarget.value)} pattern="[A-Za-z0-9._\-]{1,128}" autocomplete="off" spellcheck={false} />
        </label>
        <label>
          Subscription type
          <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="exclusive">Exclusive</option>
            <option value="failover">Failover</option>
            <option value="shared">Shared</option>
            <option value="key_shared">Key_Shared</option>
          </select>
        </label>
        <label>
          Initial position
          <select value={position} onChange={(e) => setPosition(e.currentTarget.value as typeof position)}>
            <option value="latest">Latest</option>
            <option value="earliest">Earliest</option>
          </select>
        </label>
      </div>
      <button type="submit" disabled={action.busy}>
        Create subscription
      </button>
      <ErrorBox error={action.error} what="Create subscription" />
    </form>
  );
}
