/** Durable Streams (docs/DURABLE-STREAMS.md): the list of streams and a live tail of one. */
import { useEffect, useRef, useState } from "preact/hooks";
import type { TopicSummary } from "../../protocol/types.ts";
import { STREAMS_NAMESPACE, STREAMS_PATH_PREFIX, STREAMS_TENANT, pathForTopicPart } from "../../streams/names.ts";
import { api, request, toApiError, type ApiError } from "./api.ts";
import { ErrorBox, useApi } from "./components.tsx";
import { hex, timeText } from "./format.ts";
import { href } from "./router.ts";

/** Chunks kept on screen while tailing. */
const TAIL_KEEP = 200;

/** `/v1/stream/a/b` for the stream path `a/b` (each segment percent-encoded). */
const streamUrl = (path: string) => STREAMS_PATH_PREFIX + path.split("/").map(encodeURIComponent).join("/");

export function StreamsPage() {
  const list = useApi((signal) => api<{ topics: TopicSummary[] }>("/v1/topics", { signal }), []);
  const streams = (list.data?.topics ?? []).filter((t) => t.tenant === STREAMS_TENANT && t.namespace === STREAMS_NAMESPACE);
  return (
    <>
      <h1 tabIndex={-1}>Durable Streams</h1>
      <p class="muted small">
        Each stream at{" "}
        <code>
          {STREAMS_PATH_PREFIX}
          {"{path}"}
        </code>{" "}
        is the one-partition topic <code>streams/default/{"{escaped path}"}</code>.
      </p>
      <div class="toolbar">
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      </div>
      <ErrorBox error={list.error} what="Listing streams" />
      {list.data !== undefined && (
        <div class="table-wrap">
          <table>
            <caption class="sr-only">Durable Streams</caption>
            <thead>
              <tr>
                <th scope="col">Stream path</th>
                <th scope="col">Topic</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {streams.map((t) => {
                const path = pathForTopicPart(t.topic);
                return (
                  <tr key={t.name}>
                    <th scope="row">{path === null ? <span class="muted">(long path, stored hashed)</span> : <a href={href(["streams", path])}>{path}</a>}</th>
                    <td>
                      <a href={href(["topics", t.name])}>{t.name}</a>
                    </td>
                    <td>{timeText(t.createdAt)}</td>
                  </tr>
                );
              })}
              {streams.length === 0 && (
                <tr>
                  <td colSpan={3} class="muted">
                    No streams.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}

interface Chunk {
  at: number;
  offset: string;
  text: string;
}

/** A received body as text: JSON arrays one message per line, text as is, anything else hex. */
function chunkText(contentType: string, bytes: Uint8Array): string {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  if (type === "application/json") {
    try {
      const items = JSON.parse(new TextDecoder().decode(bytes)) as unknown;
      if (Array.isArray(items)) return items.map((v) => JSON.stringify(v)).join("\n");
    } catch {
      // fall through to text
    }
  }
  if (type.startsWith("text/") || type === "application/json") {
    try {
      return new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes);
    } catch {
      // not UTF-8: hex
    }
  }
  return hex(bytes);
}

export function StreamPage({ path }: { path: string }) {
  const [from, setFrom] = useState<"-1" | "now">("now");
  const [tailing, setTailing] = useState(false);
  const [chunks, setChunks] = useState<Chunk[]>([]);
  const [error, setError] = useState<ApiError | null>(null);
  const [info, setInfo] = useState<{ contentType: string; next: string; closed: boolean } | null>(null);
  const stop = useRef<AbortController | null>(null);

  useEffect(() => {
    const ctl = new AbortController();
    setError(null);
    request(streamUrl(path), { method: "HEAD", signal: ctl.signal }).then(
      (r) => setInfo({ contentType: r.headers.get("Content-Type") ?? "", next: r.headers.get("Stream-Next-Offset") ?? "", closed: r.headers.get("Stream-Closed") === "true" }),
      (e: unknown) => {
        if (!ctl.signal.aborted) setError(toApiError(e));
      },
    );
    return () => ctl.abort();
  }, [path]);

  useEffect(() => {
    if (!tailing) return;
    const ctl = new AbortController();
    stop.current = ctl;
    setError(null);
    void (async () => {
      let offset: string = from;
      let cursor: string | null = null;
      try {
        // Catch up without waiting, then long-poll at the tail (the protocol's live mode).
        let live = false;
        while (!ctl.signal.aborted) {
          const q = new URLSearchParams({ offset });
          if (live) q.set("live", "long-poll");
          if (cursor !== null) q.set("cursor", cursor);
          const r = await request(`${streamUrl(path)}?${q}`, { signal: ctl.signal, headers: { Accept: "*/*" } });
          offset = r.headers.get("Stream-Next-Offset") ?? offset;
          cursor = r.headers.get("Stream-Cursor");
          const bytes = new Uint8Array(await r.arrayBuffer());
          if (ctl.signal.aborted) break;
          if (r.status === 200 && bytes.length > 0) {
            const text = chunkText(r.headers.get("Content-Type") ?? "", bytes);
            if (text !== "" && text !== "[]") setChunks((old) => [...old, { at: Date.now(), offset, text }].slice(-TAIL_KEEP));
          }
          if (r.headers.get("Stream-Closed") === "true") {
            setInfo((i) => (i === null ? i : { ...i, closed: true }));
            setTailing(false);
            break;
          }
          live = r.headers.get("Stream-Up-To-Date") === "true" || r.status === 204 || live;
        }
      } catch (e) {
        if (ctl.signal.aborted) return;
        setError(toApiError(e));
        setTailing(false);
      }
    })();
    return () => ctl.abort();
  }, [tailing, path, from]);

  return (
    <>
      <nav aria-label="Breadcrumb" class="crumbs">
        <a href="#/streams">Durable Streams</a> / <span>{path}</span>
      </nav>
      <h1 tabIndex={-1}>Stream {path}</h1>
      {info !== null && (
        <dl class="facts">
          <dt>Content type</dt>
          <dd>
            <code>{info.contentType}</code>
          </dd>
          <dt>Tail offset</dt>
          <dd>
            <code>{info.next}</code>
          </dd>
          <dt>Closed</dt>
          <dd>{info.closed ? "yes" : "no"}</dd>
        </dl>
      )}
      <div class="toolbar">
        <label class="inline">
          Start
          <select value={from} disabled={tailing} onChange={(e) => setFrom(e.currentTarget.value as "-1" | "now")}>
            <option value="now">At the tail (new data only)</option>
            <option value="-1">From the beginning</option>
          </select>
        </label>
        <button
          type="button"
          aria-pressed={tailing}
          onClick={() => {
            if (tailing) stop.current?.abort();
            else setChunks([]);
            setTailing(!tailing);
          }}
        >
          {tailing ? "Stop tail" : "Tail"}
        </button>
      </div>
      <ErrorBox error={error} what="Stream" />
      <p role="status" class="muted">
        {tailing ? "Tailing over long-poll." : ""}
      </p>
      <ol class="chunks">
        {chunks.map((c) => (
          <li key={`${c.at}-${c.offset}`}>
            <div class="muted small">
              {timeText(c.at)} · next offset <code>{c.offset}</code>
            </div>
            <pre>{c.text}</pre>
          </li>
        ))}
      </ol>
    </>
  );
}
