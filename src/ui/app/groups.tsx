/** Consumer groups: the list, and one group's state, members, offsets, lag over time, reset. */
import { useEffect, useState } from "preact/hooks";
import type { GroupDescription, ListGroupsResponse, ResetOffsetsResponse, ResetOffsetsSpec } from "../../protocol/groups.ts";
import { api } from "./api.ts";
import { ErrorBox, LineChart, type Series, useAction, useApi, useMetrics } from "./components.tsx";
import { num, timeText } from "./format.ts";
import { href } from "./router.ts";

/** How often the group page describes the group (its lag chart's sampling interval). */
export const GROUP_SAMPLE_MS = 2000;
/** Points kept in the lag chart (5 minutes at 2 s). */
const LAG_POINTS = 150;
/** Partitions charted one by one; beyond that only the total. */
const CHART_PARTITIONS = 8;

const groupPath = (id: string) => `/v1/groups/${encodeURIComponent(id)}`;

export function GroupsPage() {
  const list = useApi((signal) => api<ListGroupsResponse>("/v1/groups", { signal }), []);
  const metrics = useMetrics();
  const last = metrics.history.at(-1);
  return (
    <>
      <h1 tabIndex={-1}>Consumer groups</h1>
      <div class="toolbar">
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={list.error} what="Listing groups" />
      <ErrorBox error={metrics.error} what="Lag (GET /v1/metrics)" />
      {list.data !== undefined && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Consumer groups</caption>
            <thead>
              <tr>
                <th scope="col">Group</th>
                <th scope="col">State</th>
                <th scope="col" class="num">
                  Members
                </th>
                <th scope="col">Assignor</th>
                <th scope="col" class="num">
                  Total lag
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data.groups.map((g) => (
                <tr key={g.groupId}>
                  <th scope="row">
                    <a href={href(["groups", g.groupId])}>{g.groupId}</a>
                  </th>
                  <td>{g.state}</td>
                  <td class="num">{g.members}</td>
                  <td>{g.assignor}</td>
                  <td class="num">{num(last?.groupLag.get(g.groupId))}</td>
                </tr>
              ))}
              {list.data.groups.length === 0 && (
                <tr>
                  <td colSpan={5} class="muted">
                    No consumer groups.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
      <p class="muted small">The list is eventually consistent (docs/PROTOCOL.md "Consumer groups"); a group's own page is authoritative.</p>
    </>
  );
}

const partKey = (topic: string, partition: number) => `${topic}[${partition}]`;

export function GroupPage({ id }: { id: string }) {
  const desc = useApi((signal) => api<GroupDescription>(groupPath(id), { signal }), [id], GROUP_SAMPLE_MS);
  const [history, setHistory] = useState<{ at: number; total: number; parts: Map<string, number> }[]>([]);
  const g = desc.data;
  useEffect(() => setHistory([]), [id]);
  useEffect(() => {
    if (g === undefined) return;
    const parts = new Map<string, number>();
    for (const o of g.offsets) if (o.lag !== null) parts.set(partKey(o.topic, o.partition), o.lag);
    setHistory((h) => [...h, { at: Date.now(), total: g.totalLag, parts }].slice(-LAG_POINTS));
  }, [g]);
  const keys = g === undefined ? [] : g.offsets.filter((o) => o.lag !== null).map((o) => partKey(o.topic, o.partition));
  const series: Series[] = [
    { name: "total", points: history.map((p) => [p.at, p.total]) },
    ...(keys.length > 1 && keys.length <= CHART_PARTITIONS
      ? keys.map((k) => ({ name: k, points: history.flatMap((p) => (p.parts.has(k) ? [[p.at, p.parts.get(k)!] as [number, number]] : [])) }))
      : []),
  ];
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/groups">Consumer groups</a> / <span>{id}</span>
      </nav>
      <h1 tabIndex={-1}>Group {id}</h1>
      <ErrorBox error={desc.error} what="Describe group" />
      {g !== undefined && (
        <>
          <dl class="facts">
            <dt>State</dt>
            <dd data-testid="group-state">{g.state}</dd>
            <dt>Total lag</dt>
            <dd data-testid="total-lag">{num(g.totalLag)}</dd>
            <dt>Group epoch</dt>
            <dd>{g.groupEpoch}</dd>
            <dt>Assignor</dt>
            <dd>
              {g.assignor} ({g.rebalanceProtocol})
            </dd>
            <dt>Members</dt>
            <dd>{g.members.length}</dd>
          </dl>
          <LineChart title={`Lag of ${id} (records, sampled every ${GROUP_SAMPLE_MS / 1000} s while this page is open)`} series={series} unit="records" />
          <section aria-labelledby="offsets-title">
            <h2 id="offsets-title">Committed offsets and lag</h2>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Topic</th>
                    <th scope="col" class="num">
                      Partition
                    </th>
                    <th scope="col" class="num">
                      Committed
                    </th>
                    <th scope="col" class="num">
                      Log end
                    </th>
                    <th scope="col" class="num">
                      Lag
                    </th>
                    <th scope="col">Owner</th>
                  </tr>
                </thead>
                <tbody>
                  {g.offsets.map((o) => (
                    <tr key={partKey(o.topic, o.partition)}>
                      <th scope="row">
                        <a href={href(["topics", o.topic])}>{o.topic}</a>
                      </th>
                      <td class="num">{o.partition}</td>
                      <td class="num">{num(o.committedOffset)}</td>
                      <td class="num">{num(o.logEndOffset)}</td>
                      <td class="num" data-testid={`lag-${partKey(o.topic, o.partition)}`}>
                        {num(o.lag)}
                      </td>
                      <td>{o.memberId ?? <span class="muted">none</span>}</td>
                    </tr>
                  ))}
                  {g.offsets.length === 0 && (
                    <tr>
                      <td colSpan={6} class="muted">
                        No committed offsets and no subscribed partitions.
                      </td>
                    </tr>
                  )}
                </tbody>
              </table>
            </div>
          </section>
          <section aria-labelledby="members-title">
            <h2 id="members-title">Members</h2>
            {g.members.length === 0 ? (
              <p class="muted">No members: the group is empty.</p>
            ) : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th scope="col">Member</th>
                      <th scope="col">Client</th>
                      <th scope="col" class="num">
                        Epoch
                      </th>
                      <th scope="col">State</th>
                      <th scope="col">Assignment</th>
                      <th scope="col">Last heartbeat</th>
                    </tr>
                  </thead>
                  <tbody>
                    {g.members.map((m) => (
                      <tr key={m.memberId}>
                        <th scope="row">
                          <code>{m.memberId}</code>
                          {m.instanceId !== null && <div class="muted small">instance {m.instanceId}</div>}
                        </th>
                        <td>{m.clientId}</td>
                        <td class="num">{m.memberEpoch}</td>
                        <td>{m.state}</td>
                        <td>{m.assignment.map((a) => `${a.topic} [${a.partitions.join(", ")}]`).join("; ") || <span class="muted">nothing</span>}</td>
                        <td>{timeText(m.lastHeartbeatMs)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
          <ResetOffsets id={id} topics={[...new Set([...g.offsets.map((o) => o.topic), ...g.members.flatMap((m) => m.subscribedTopicNames)])]} onDone={desc.reload} />
        </>
      )}
    </>
  );
}

function ResetOffsets({ id, topics, onDone }: { id: string; topics: string[]; onDone: () => void }) {
  const [topic, setTopic] = useState(topics[0] ?? "");
  const [partitions, setPartitions] = useState("");
  const [to, setTo] = useState<ResetOffsetsSpec["to"]>("earliest");
  const [value, setValue] = useState("");
  const [dryRun, setDryRun] = useState(true);
  const [result, setResult] = useState<ResetOffsetsResponse | null>(null);
  const action = useAction();
  return (
    <section aria-labelledby="reset-title" class="card">
      <h2 id="reset-title">Reset offsets</h2>
      <p class="muted small">Only while the group has no members: the API answers NON_EMPTY_GROUP otherwise.</p>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setResult(null);
          void action.run(async () => {
            const spec: ResetOffsetsSpec = to === "timestamp" ? { to, timestamp: new Date(value).getTime() } : to === "offset" ? { to, offset: Number(value) } : { to };
            const parts = partitions.trim() === "" ? null : partitions.split(",").map((p) => Number(p.trim()));
            const r = await api<ResetOffsetsResponse>(`${groupPath(id)}/reset-offsets`, { method: "POST", body: { topics: [{ topic, partitions: parts }], spec, dryRun } });
            setResult(r);
            if (!dryRun) onDone();
          });
        }}
      >
        <div class="row">
          <label>
            Topic
            <input list="reset-topics" required value={topic} onInput={(e) => setTopic(e.currentTarget.value)} spellcheck={false} />
            <datalist id="reset-topics">
              {topics.map((t) => (
                <option key={t} value={t} />
              ))}
            </datalist>
          </label>
          <label>
            Partitions (comma-separated, empty for all)
            <input value={partitions} onInput={(e) => setPartitions(e.currentTarget.value)} inputMode="numeric" />
          </label>
          <label>
            Reset to
            <select value={to} onChange={(e) => setTo(e.currentTarget.value as ResetOffsetsSpec["to"])}>
              <option value="earliest">Earliest</option>
              <option value="latest">Latest</option>
              <option value="timestamp">Timestamp</option>
              <option value="offset">Offset</option>
            </select>
          </label>
          {to === "timestamp" && (
            <label>
              Time (your local time)
              <input type="datetime-local" step={1} required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
            </label>
          )}
          {to === "offset" && (
            <label>
              Offset
              <input type="number" min={0} required value={value} onInput={(e) => setValue(e.currentTarget.value)} />
            </label>
          )}
        </div>
        <label class="check">
          <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.currentTarget.checked)} /> Dry run (show the new offsets, change nothing)
        </label>
        <button type="submit" disabled={action.busy}>
          {dryRun ? "Preview reset" : "Reset offsets"}
        </button>
      </form>
      <ErrorBox error={action.error} what="Reset offsets" />
      {result !== null && (
        <div role="status">
          <p>{result.dryRun ? "Dry run: nothing was written." : "Offsets reset."}</p>
          <ul>
            {result.offsets.map((o) => (
              <li key={partKey(o.topic, o.partition)}>
                {partKey(o.topic, o.partition)}: {num(o.previousOffset)} → {o.offset}
              </li>
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}
