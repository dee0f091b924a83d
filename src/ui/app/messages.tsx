/** Messages of one partition: browse from an offset or a timestamp, live tail (long-poll), produce a test message. */
import { useEffect, useRef, useState } from "preact/hooks";
import type { JsonFetchResponse, ListOffsetsResponse, ProduceResponse, TopicDescription } from "../../protocol/types.ts";
import { api, topicPath, toApiError, type ApiError } from "./api.ts";
import { ErrorBox, useAction, useApi } from "./components.tsx";
import { type ValueFormat, showValue, timeText } from "./format.ts";
import { href, navigate } from "./router.ts";

/** Records per page of a browse. */
const PAGE_RECORDS = 50;
/** Records kept on screen while tailing (older ones scroll away). */
const TAIL_KEEP = 500;
/** Long-poll wait of one tail request (the API's maximum is 60 s). */
const TAIL_WAIT_MS = 20_000;

type From = "offset" | "timestamp" | "earliest" | "latest";

interface FetchedRecord {
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: { key: string; value: string | null }[];
}

/** One fetch of `count` records at `offset`, keys and values as base64 so no byte is lost. */
async function fetchAt(topic: string, partition: number, offset: number, o: { maxWaitMs?: number; signal?: AbortSignal } = {}): Promise<JsonFetchResponse> {
  const q = new URLSearchParams({ offset: String(offset), maxRecords: String(PAGE_RECORDS), encoding: "base64", maxWaitMs: String(o.maxWaitMs ?? 0) });
  return await api<JsonFetchResponse>(`${topicPath(topic)}/partitions/${partition}/records?${q}`, { signal: o.signal });
}

async function listOffset(topic: string, partition: number, spec: string, timestamp?: number): Promise<number | null> {
  const q = new URLSearchParams({ spec, ...(timestamp !== undefined ? { timestamp: String(timestamp) } : {}) });
  return (await api<ListOffsetsResponse>(`${topicPath(topic)}/partitions/${partition}/offsets?${q}`)).offset;
}

export function MessagesPage({ topic, query }: { topic: string; query: URLSearchParams }) {
  const desc = useApi((signal) => api<TopicDescription>(topicPath(topic), { signal }), [topic]);
  const partition = Number(query.get("partition") ?? "0");
  const [from, setFrom] = useState<From>(query.has("offset") ? "offset" : "earliest");
  const [offset, setOffset] = useState(query.get("offset") ?? "0");
  const [when, setWhen] = useState("");
  const [format, setFormat] = useState<ValueFormat>("auto");
  const [records, setRecords] = useState<FetchedRecord[]>([]);
  const [next, setNext] = useState<number | null>(null);
  const [bounds, setBounds] = useState<{ logStartOffset: number; highWatermark: number } | null>(null);
  const [status, setStatus] = useState("");
  const browse = useAction();
  const [tailing, setTailing] = useState(false);
  const [tailError, setTailError] = useState<ApiError | null>(null);
  const tailAbort = useRef<AbortController | null>(null);
  const nextRef = useRef<number | null>(null);
  nextRef.current = next;

  const show = (r: JsonFetchResponse, append: boolean) => {
    const got = r.records as unknown as FetchedRecord[];
    setRecords((old) => (append ? [...old, ...got].slice(-TAIL_KEEP) : got));
    setNext(r.nextOffset);
    setBounds({ logStartOffset: r.logStartOffset, highWatermark: r.highWatermark });
  };

  const load = () =>
    browse.run(async () => {
      let start: number;
      if (from === "offset") start = Number(offset);
      else if (from === "earliest") start = (await listOffset(topic, partition, "earliest")) ?? 0;
      else if (from === "latest") {
        const end = (await listOffset(topic, partition, "latest")) ?? 0;
        const first = (await listOffset(topic, partition, "earliest")) ?? 0;
        start = Math.max(first, end - PAGE_RECORDS);
      } else {
        const ms = new Date(when).getTime();
        if (!Number.isFinite(ms)) throw new Error("Pick a date and time to start from.");
        const found = await listOffset(topic, partition, "timestamp", ms);
        // No record at or after the time: start at the log end (nothing to show yet).
        start = found ?? (await listOffset(topic, partition, "latest")) ?? 0;
      }
      const r = await fetchAt(topic, partition, start);
      show(r, false);
      setStatus(`${r.records.length} record${r.records.length === 1 ? "" : "s"} from offset ${start}.`);
    });

  // Browse from the start when the page opens or the partition changes.
  useEffect(() => {
    setRecords([]);
    setNext(null);
    void load();
  }, [topic, partition]);

  // Live tail: long-poll fetches from the next offset until stopped or the page is left.
  useEffect(() => {
    if (!tailing) return;
    const ctl = new AbortController();
    tailAbort.current = ctl;
    setTailError(null);
    void (async () => {
      try {
        let at = nextRef.current ?? (await listOffset(topic, partition, "latest")) ?? 0;
        while (!ctl.signal.aborted) {
          const r = await fetchAt(topic, partition, at, { maxWaitMs: TAIL_WAIT_MS, signal: ctl.signal });
          if (ctl.signal.aborted) break;
          show(r, true);
          at = r.nextOffset;
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        setTailError(toApiError(e));
        setTailing(false);
      }
    })();
    return () => ctl.abort();
  }, [tailing, topic, partition]);

  const partitions = desc.data?.partitions ?? partition + 1;
  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/topics">Topics</a> / <a href={href(["topics", topic])}>{topic}</a> / <span>Messages</span>
      </nav>
      <h1 tabIndex={-1}>Messages of {topic}</h1>
      <ErrorBox error={desc.error} what="Describe topic" />
      <form
        class="card"
        aria-label="Browse"
        onSubmit={(e) => {
          e.preventDefault();
          void load();
        }}
      >
        <div class="row">
          <label>
            Partition
            <select value={partition} onChange={(e) => navigate(href(["topics", topic, "messages"], { partition: e.currentTarget.value }))}>
              {Array.from({ length: partitions }, (_, p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <label>
            Start from
            <select value={from} onChange={(e) => setFrom(e.currentTarget.value as From)}>
              <option value="earliest">Earliest</option>
              <option value="latest">Latest {PAGE_RECORDS}</option>
              <option value="offset">Offset</option>
              <option value="timestamp">Timestamp</option>
            </select>
          </label>
          {from === "offset" && (
            <label>
              Offset
              <input type="number" min={0} required value={offset} onInput={(e) => setOffset(e.currentTarget.value)} />
            </label>
          )}
          {from === "timestamp" && (
            <label>
              Time (your local time)
              <input type="datetime-local" step={1} required value={when} onInput={(e) => setWhen(e.currentTarget.value)} />
            </label>
          )}
          <label>
            Show values as
            <select value={format} onChange={(e) => setFormat(e.currentTarget.value as ValueFormat)}>
              <option value="auto">Auto (JSON, text or hex)</option>
              <option value="text">Text</option>
              <option value="json">JSON (pretty)</option>
              <option value="hex">Hex</option>
            </select>
          </label>
        </div>
        <button type="submit" disabled={browse.busy}>
          Browse
        </button>{" "}
        <button
          type="button"
          disabled={next === null || (bounds !== null && next >= bounds.highWatermark) || browse.busy || tailing}
          onClick={() => void browse.run(async () => show(await fetchAt(topic, partition, next!), true))}
        >
          Load more
        </button>{" "}
        <button
          type="button"
          aria-pressed={tailing}
          onClick={() => {
            if (tailing) tailAbort.current?.abort();
            setTailing(!tailing);
          }}
        >
          {tailing ? "Stop live tail" : "Live tail"}
        </button>
      </form>
      <ErrorBox error={browse.error} what="Browse" />
      <ErrorBox error={tailError} what="Live tail" />
      <p role="status" class="muted">
        {bounds !== null && `Log start ${bounds.logStartOffset}, high watermark ${bounds.highWatermark}. `}
        {tailing ? "Tailing: new records appear below as they are appended." : status}
      </p>
      <RecordTable records={records} format={format} />
      <Produce topic={topic} partition={partition} partitions={partitions} />
    </>
  );
}

function RecordTable({ records, format }: { records: FetchedRecord[]; format: ValueFormat }) {
  if (records.length === 0) return <p class="muted">No records here.</p>;
  return (
    <div class="table-wrap">
      <table class="records">
        <caption class="sr-only">Records</caption>
        <thead>
          <tr>
            <th scope="col">Offset</th>
            <th scope="col">Timestamp</th>
            <th scope="col">Key</th>
            <th scope="col">Value</th>
            <th scope="col">Headers</th>
          </tr>
        </thead>
        <tbody>
          {records.map((r) => {
            const key = showValue(r.key, format === "json" ? "auto" : format);
            const value = showValue(r.value, format);
            return (
              <tr key={r.offset}>
                <th scope="row" data-label="Offset">
                  {r.offset}
                </th>
                <td data-label="Timestamp">{timeText(r.timestamp)}</td>
                <td data-label="Key">
                  <pre class={`v-${key.as}`}>{key.text}</pre>
                </td>
                <td data-label="Value">
                  <pre class={`v-${value.as}`}>{value.text}</pre>
                </td>
                <td data-label="Headers">
                  {r.headers.length === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    <ul class="headers">
                      {r.headers.map((h, i) => (
                        <li key={i}>
                          <code>{h.key}</code>: <code>{showValue(h.value, format === "json" ? "auto" : format).text}</code>
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** `k=v` lines as produce headers (order and duplicates kept; `k` alone is a null value). */
function parseHeaderLines(text: string): { key: string; value: string | null }[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .map((l) => {
      const eq = l.indexOf("=");
      return eq < 0 ? { key: l, value: null } : { key: l.slice(0, eq), value: l.slice(eq + 1) };
    });
}

function Produce({ topic, partition, partitions }: { topic: string; partition: number; partitions: number }) {
  const [key, setKey] = useState("");
  const [value, setValue] = useState("");
  const [headers, setHeaders] = useState("");
  const [target, setTarget] = useState<"this" | "key">("this");
  const [result, setResult] = useState("");
  const action = useAction();
  return (
    <section aria-labelledby="produce-title" class="card">
      <h2 id="produce-title">Produce a test message</h2>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          setResult("");
          void action.run(async () => {
            const record = { key: key === "" ? null : key, value, ...(headers.trim() !== "" ? { headers: parseHeaderLines(headers) } : {}) };
            const path = target === "this" ? `${topicPath(topic)}/partitions/${partition}/records` : `${topicPath(topic)}/records`;
            const r = await api<ProduceResponse>(path, { method: "POST", body: { keyEncoding: "string", valueEncoding: "string", records: [record] } });
            const at = r.records[0];
            setResult(at === undefined ? "Produced." : `Produced to partition ${at.partition} at offset ${at.offset}.`);
          });
        }}
      >
        <div class="row">
          <label>
            Key (empty for null)
            <input name="key" value={key} onInput={(e) => setKey(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
          </label>
          {partitions > 1 && (
            <label>
              Partition
              <select value={target} onChange={(e) => setTarget(e.currentTarget.value as "this" | "key")}>
                <option value="this">This one ({partition})</option>
                <option value="key">By key (or round robin)</option>
              </select>
            </label>
          )}
        </div>
        <label>
          Value (UTF-8 text; JSON is stored as its text)
          <textarea name="value" rows={3} value={value} onInput={(e) => setValue(e.currentTarget.value)} spellcheck={false} />
        </label>
        <label>
          <span>
            Headers (optional, one <code>key=value</code> per line)
          </span>
          <textarea name="headers" rows={2} value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} spellcheck={false} />
        </label>
        <button type="submit" disabled={action.busy}>
          Produce
        </button>{" "}
        <span role="status">{result}</span>
      </form>
      <ErrorBox error={action.error} what="Produce" />
    </section>
  );
}
