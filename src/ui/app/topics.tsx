/** Topics: the list (partitions, size, rates), create, and one topic's partitions, configs, alter and delete. */
import { useRef, useState } from "preact/hooks";
import type { TopicDescription, TopicSummary } from "../../protocol/types.ts";
import { api, topicPath } from "./api.ts";
import { ConfirmDialog, ErrorBox, LineChart, type Series, useAction, useApi, useMetrics } from "./components.tsx";
import { bytesText, num, rateText, timeText } from "./format.ts";
import { href, navigate } from "./router.ts";
import { SubscriptionsSection } from "./subscriptions.tsx";

/**
 * `key=value` lines (blank lines and `#` comments skipped) as a configs object. `true` and
 * `false` become booleans (`remote.storage.enable`); every other value is sent as written, a
 * string, which the API reads as an exact decimal for integer configs (docs/PROTOCOL.md "Topics").
 * Throws on a line without `=`.
 */
export function parseConfigLines(text: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) throw new Error(`Line ${i + 1}: expected key=value, got "${line}".`);
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    out[key] = value === "true" ? true : value === "false" ? false : value;
  }
  return out;
}

export function TopicsPage() {
  const list = useApi((signal) => api<{ topics: TopicSummary[] }>("/v1/topics", { signal }), []);
  const metrics = useMetrics();
  const last = metrics.history.at(-1);
  const [filter, setFilter] = useState("");
  const topics = (list.data?.topics ?? []).filter((t) => t.name.includes(filter));
  return (
    <>
      <h1 tabIndex={-1}>Topics</h1>
      <CreateTopic onCreated={(name) => navigate(href(["topics", name]))} />
      <section aria-labelledby="topic-list-title">
        <div class="toolbar">
          <h2 id="topic-list-title">All topics</h2>
          <label class="inline">
            Filter
            <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
          </label>
          <button type="button" onClick={list.reload}>
            Refresh
          </button>
        </div>
        <ErrorBox error={list.error} what="Listing topics" />
        <ErrorBox error={metrics.error} what="Sizes and rates (GET /v1/metrics)" />
        {list.data !== undefined && (
          <div class="table-wrap">
            <table>
              <caption class="sr-only">Topics with their partitions, stored size and rates</caption>
              <thead>
                <tr>
                  <th scope="col">Topic</th>
                  <th scope="col" class="num">
                    Partitions
                  </th>
                  <th scope="col" class="num">
                    Size
                  </th>
                  <th scope="col" class="num">
                    In
                  </th>
                  <th scope="col" class="num wide-only">
                    Out
                  </th>
                  <th scope="col" class="wide-only">
                    Cleanup
                  </th>
                </tr>
              </thead>
              <tbody>
                {topics.map((t) => {
                  const s = last?.topics.get(t.name);
                  return (
                    <tr key={t.name}>
                      <th scope="row">
                        <a href={href(["topics", t.name])}>{t.name}</a>
                      </th>
                      <td class="num">{t.partitions}</td>
                      <td class="num">{bytesText(s?.sizeBytes)}</td>
                      <td class="num">{rateText(s?.rates?.recordsIn, "rec")}</td>
                      <td class="num wide-only">{rateText(s?.rates?.recordsOut, "rec")}</td>
                      <td class="wide-only">{t.configs["cleanup.policy"]}</td>
                    </tr>
                  );
                })}
                {topics.length === 0 && (
                  <tr>
                    <td colSpan={6} class="muted">
                      No topics{filter !== "" ? " match the filter" : ""}.
                    </td>
                  </tr>
                )}
              </tbody>
            </table>
          </div>
        )}
        <p class="muted small">Size and rates come from GET /v1/metrics, sampled every 5 s while this page is open; rates need two samples.</p>
      </section>
    </>
  );
}

function CreateTopic({ onCreated }: { onCreated: (name: string) => void }) {
  const [name, setName] = useState("");
  const [partitions, setPartitions] = useState("1");
  const [configs, setConfigs] = useState("");
  const action = useAction();
  return (
    <section aria-labelledby="create-topic-title" class="card">
      <h2 id="create-topic-title">Create a topic</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            const body = { name, partitions: Number(partitions), ...(configs.trim() !== "" ? { configs: parseConfigLines(configs) } : {}) };
            const created = await api<TopicDescription>("/v1/topics", { method: "POST", body });
            onCreated(created.name);
          });
        }}
      >
        <div class="row">
          <label>
            Name
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} placeholder="orders or tenant/namespace/orders" autocomplete="off" spellcheck={false} />
          </label>
          <label>
            Partitions
            <input name="partitions" type="number" min={1} max={1024} required value={partitions} onInput={(e) => setPartitions(e.currentTarget.value)} />
          </label>
        </div>
        <label>
          <span>
            Configs (optional, one <code>key=value</code> per line)
          </span>
          <textarea name="configs" rows={2} value={configs} onInput={(e) => setConfigs(e.currentTarget.value)} placeholder="retention.ms=86400000" spellcheck={false} />
        </label>
        <button type="submit" disabled={action.busy}>
          Create topic
        </button>
      </form>
      <ErrorBox error={action.error} what="Create topic" />
    </section>
  );
}

export function TopicPage({ name }: { name: string }) {
  const desc = useApi((signal) => api<TopicDescription>(topicPath(name), { signal }), [name]);
  const metrics = useMetrics();
  const [confirming, setConfirming] = useState(false);
  const del = useAction();
  const t = desc.data;
  const series: Series[] = [
    { name: "records in", points: metrics.history.flatMap((p) => (p.topics.get(name)?.rates ? [[p.at, p.topics.get(name)!.rates!.recordsIn] as [number, number]] : [])) },
    { name: "records out", points: metrics.history.flatMap((p) => (p.topics.get(name)?.rates ? [[p.at, p.topics.get(name)!.rates!.recordsOut] as [number, number]] : [])) },
  ];
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/topics">Topics</a> / <span>{name}</span>
      </nav>
      <h1 tabIndex={-1}>Topic {name}</h1>
      <ErrorBox error={desc.error} what="Describe topic" />
      {t !== undefined && (
        <>
          <p>
            <a class="button" href={href(["topics", name, "messages"])}>
              Browse messages
            </a>{" "}
            <button type="button" onClick={desc.reload}>
              Refresh
            </button>{" "}
            <button type="button" class="danger" onClick={() => setConfirming(true)}>
              Delete topic…
            </button>
          </p>
          <dl class="facts">
            <dt>Topic id</dt>
            <dd>
              <code>{t.topicId}</code>
            </dd>
            <dt>Created</dt>
            <dd>{timeText(t.createdAt)}</dd>
            <dt>Partitions</dt>
            <dd>{t.partitions}</dd>
          </dl>
          <section aria-labelledby="partitions-title">
            <h2 id="partitions-title">Partitions</h2>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Partition</th>
                    <th scope="col" class="num">
                      Log start
                    </th>
                    <th scope="col" class="num">
                      High watermark
                    </th>
                    <th scope="col" class="num">
                      Records
                    </th>
                    <th scope="col" class="num">
                      Size
                    </th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {t.partitionDetails.map((p) => (
                    <tr key={p.partition}>
                      <th scope="row">{p.partition}</th>
                      <td class="num">{num(p.logStartOffset)}</td>
                      <td class="num">{num(p.highWatermark)}</td>
                      <td class="num">{num(p.recordCount)}</td>
                      <td class="num">{bytesText(p.bytes)}</td>
                      <td>
                        <a href={href(["topics", name, "messages"], { partition: p.partition })}>Browse</a>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </section>
          <ErrorBox error={metrics.error} what="Rates (GET /v1/metrics)" />
          <LineChart title="Records per second" series={series} unit="rec/s" />
          <SubscriptionsSection topic={name} partitions={t.partitions} />
          <AlterTopic topic={t} onDone={desc.reload} />
        </>
      )}
      <ErrorBox error={del.error} what="Delete topic" />
      <ConfirmDialog
        open={confirming}
        title={`Delete topic ${name}?`}
        expected={name}
        confirmLabel="Delete"
        onCancel={() => setConfirming(false)}
        onConfirm={() => {
          setConfirming(false);
          void del.run(async () => {
            await api(topicPath(name), { method: "DELETE" });
            navigate("#/topics");
          });
        }}
      >
        <p>This deletes every partition's records. Creating the topic again starts at offset 0; consumer groups' committed offsets of this topic no longer apply.</p>
      </ConfirmDialog>
    </>
  );
}

function AlterTopic({ topic, onDone }: { topic: TopicDescription; onDone: () => void }) {
  const [configs, setConfigs] = useState("");
  const [partitions, setPartitions] = useState(String(topic.partitions));
  const action = useAction();
  const [done, setDone] = useState("");
  const changes = useRef<HTMLTextAreaElement>(null);
  /** Puts `key=current value` on a line of the changes field, to edit it there. */
  const edit = (key: string, value: unknown) => {
    const line = `${key}=${String(value)}`;
    setConfigs((c) => (c.trim() === "" ? line : `${c.replace(/\n*$/, "")}\n${line}`));
    changes.current?.focus();
  };
  return (
    <section aria-labelledby="configs-title">
      <h2 id="configs-title">Configs</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th scope="col">Config</th>
              <th scope="col">Value</th>
              <th scope="col">
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {Object.entries(topic.configs).map(([k, v]) => (
              <tr key={k}>
                <th scope="row">
                  <code>{k}</code>
                </th>
                <td>
                  <code>{String(v)}</code>
                </td>
                <td>
                  <button type="button" class="link" aria-label={`Edit ${k}`} onClick={() => edit(k, v)}>
                    Edit
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <form
        class="card"
        onSubmit={(e) => {
          e.preventDefault();
          setDone("");
          void action.run(async () => {
            const body: { partitions?: number; configs?: Record<string, unknown> } = {};
            if (Number(partitions) !== topic.partitions) body.partitions = Number(partitions);
            if (configs.trim() !== "") body.configs = parseConfigLines(configs);
            await api(topicPath(topic.name), { method: "PATCH", body });
            setConfigs("");
            setDone("Saved.");
            onDone();
          });
        }}
      >
        <h3>Alter</h3>
        <label>
          Partitions (can only grow)
          <input type="number" min={topic.partitions} max={1024} value={partitions} onInput={(e) => setPartitions(e.currentTarget.value)} />
        </label>
        <label>
          <span>
            Config changes (one <code>key=value</code> per line)
          </span>
          <textarea ref={changes} rows={3} value={configs} onInput={(e) => setConfigs(e.currentTarget.value)} placeholder="retention.ms=3600000" spellcheck={false} />
        </label>
        <button type="submit" disabled={action.busy}>
          Apply changes
        </button>{" "}
        <span role="status">{done}</span>
      </form>
      <ErrorBox error={action.error} what="Alter topic" />
    </section>
  );
}
