/** Shared pieces of the console's pages: errors, confirmation, charts, data hooks. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useId, useRef, useState } from "preact/hooks";
import { type ApiError, toApiError } from "./api.ts";
import { type MetricsState, sampler } from "./metrics.ts";

/**
 * An API error as the API answered it: HTTP status, code, message and details. `role="alert"`
 * so screen readers announce it; never hidden, never rewritten.
 */
export function ErrorBox({ error, what }: { error: ApiError | null; what?: string }) {
  if (error === null) return null;
  return (
    <div class="error" role="alert">
      <strong>
        {what !== undefined ? `${what}: ` : ""}
        {error.status !== 0 ? `${error.status} ` : ""}
        <code class="error-code">{error.code}</code>
      </strong>{" "}
      <span class="error-message">{error.message}</span>
      {error.details !== undefined && Object.keys(error.details).length > 0 && <pre class="error-details">{JSON.stringify(error.details, null, 2)}</pre>}
    </div>
  );
}

/** Result of {@link useApi}: the data (kept while reloading), the last error, and a reload. */
export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads `load()` now and whenever `deps` change or `reload` is called; with `everyMs`, again
 * that long after each answer (never two requests in flight).
 */
export function useApi<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    const ctl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const again = () => {
      if (everyMs !== undefined && !ctl.signal.aborted) timer = setTimeout(reload, everyMs);
    };
    setLoading(true);
    load(ctl.signal).then(
      (d) => {
        if (ctl.signal.aborted) return;
        setData(d);
        setError(null);
        setLoading(false);
        again();
      },
      (e: unknown) => {
        if (ctl.signal.aborted) return;
        setError(toApiError(e));
        setLoading(false);
        again();
      },
    );
    return () => {
      ctl.abort();
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { data, error, loading, reload };
}

/** The shared metrics sampler's state, scraping while the component is mounted. */
export function useMetrics(): MetricsState {
  const [state, setState] = useState<MetricsState>({ history: [], error: null });
  useEffect(() => sampler.subscribe(setState), []);
  return state;
}

/** Runs an action, keeping its error for an ErrorBox and a busy flag for the button. */
export function useAction(): { busy: boolean; error: ApiError | null; run: (f: () => Promise<void>) => Promise<void>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = useCallback(async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(toApiError(e));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}

/**
 * A modal confirmation (`<dialog>`, focus trapped by the browser, Escape cancels) for
 * destructive actions. The confirm button stays disabled until the user types `expected`.
 */
export function ConfirmDialog(props: { open: boolean; title: string; expected: string; confirmLabel: string; onConfirm: () => void; onCancel: () => void; children?: ComponentChildren }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [typed, setTyped] = useState("");
  // Several dialogs may share a page (a topic's, a subscription's): each its own title id.
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (d === null) return;
    if (props.open && !d.open) {
      setTyped("");
      d.showModal();
    } else if (!props.open && d.open) d.close();
  }, [props.open]);
  return (
    <dialog ref={ref} aria-labelledby={titleId} onCancel={props.onCancel} onClose={props.onCancel}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (typed === props.expected) props.onConfirm();
        }}
      >
        <h2 id={titleId}>{props.title}</h2>
        {props.children}
        <label>
          <span>
            Type <code>{props.expected}</code> to confirm
          </span>
          <input value={typed} onInput={(e) => setTyped(e.currentTarget.value)} autocomplete="off" spellcheck={false} autoFocus />
        </label>
        <div class="buttons">
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit" class="danger" disabled={typed !== props.expected}>
            {props.confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

export interface Series {
  name: string;
  /** [time ms, value] pairs, in time order. */
  points: [number, number][];
}

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777"];

/**
 * A line chart (SVG) of a few series over time, with its latest values as a legend. For
 * screen readers it is one image whose label gives the latest value of each series.
 */
export function LineChart({ title, series, unit }: { title: string; series: Series[]; unit: string }) {
  const W = 600;
  const H = 160;
  const PAD = { l: 48, r: 8, t: 8, b: 20 };
  const all = series.flatMap((s) => s.points);
  const latest = series.map((s) => `${s.name}: ${s.points.length > 0 ? fmt(s.points.at(-1)![1]) : "no data"} ${unit}`);
  if (all.length === 0) {
    return (
      <figure class="chart">
        <figcaption>{title}</figcaption>
        <p class="muted">Waiting for samples…</p>
      </figure>
    );
  }
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  const vMax = Math.max(...all.map((p) => p[1]), 1);
  const x = (t: number) => PAD.l + ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const y = (v: number) => H - PAD.b - (v / vMax) * (H - PAD.t - PAD.b);
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}. Latest: ${latest.join("; ")}`}>
        <line x1={PAD.l} y1={H - PAD.b} x2={W - PAD.r} y2={H - PAD.b} class="axis" />
        <line x1={PAD.l} y1={PAD.t} x2={PAD.l} y2={H - PAD.b} class="axis" />
        <text x={PAD.l - 4} y={PAD.t + 10} text-anchor="end" class="tick">
          {fmt(vMax)}
        </text>
        <text x={PAD.l - 4} y={H - PAD.b} text-anchor="end" class="tick">
          0
        </text>
        <text x={W - PAD.r} y={H - 4} text-anchor="end" class="tick">
          {new Date(t1).toLocaleTimeString()}
        </text>
        {series.map((s, i) =>
          s.points.length === 1 ? (
            <circle key={s.name} cx={x(s.points[0]![0])} cy={y(s.points[0]![1])} r={3} fill={PALETTE[i % PALETTE.length]} />
          ) : (
            <polyline key={s.name} fill="none" stroke={PALETTE[i % PALETTE.length]} stroke-width={2} points={s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ")} />
          ),
        )}
      </svg>
      <ul class="legend">
        {series.map((s, i) => (
          <li key={s.name}>
            <span class="swatch" style={{ background: PALETTE[i % PALETTE.length] }} aria-hidden="true" />
            {s.name}: {s.points.length > 0 ? fmt(s.points.at(-1)![1]) : "–"} {unit}
          </li>
        ))}
      </ul>
    </figure>
  );
}

function fmt(v: number): string {
  if (v >= 1000) return Math.round(v).toLocaleString("en-US");
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}
