/**
 * Coalescing of concurrent produce requests for one partition into shared append RPCs.
 *
 * Why: a Worker isolate serves many HTTP requests at once. When several of them append to
 * the same partition, sending each as its own Durable Object RPC costs one RPC and one
 * durable commit per request. Instead, each isolate keeps at most `maxInFlight` append RPCs
 * in flight per partition ("lane"); requests that arrive while the lane is full queue, and
 * the next RPC carries all of them, as a Kafka producer's sender drains every batch ready
 * for a partition into one produce request (max.in.flight.requests.per.connection bounds
 * the pipelining; Confluent's REST proxy shares one producer per proxy the same way).
 * The partition appends each carried request in its own transaction (all-or-nothing per
 * request, never across requests) in one event, so they share one durable commit, and it
 * answers each separately. No answer is given before that commit: the output gate holds the
 * RPC's reply until the write is durable (docs/ARCHITECTURE.md, "What an ack promises").
 *
 * A lane with a free slot adds no latency: the request sends at once, alone.
 *
 * Request contexts: on Workers, I/O belongs to the request that started it. So an RPC that
 * carries a group is always sent from the context of one request in that group (its
 * leader), and results reach the others as plain values. When an RPC returns, the oldest
 * queued request is told to lead the next one and sends it from its own context.
 * `keepAlive` (the leader's `waitUntil`) keeps a leader's RPC running for the requests it
 * carries even if the leader's own client goes away. A request told to lead that never
 * does (its request was cancelled first) is detected by the stall timer of the requests
 * queued behind it, one of which then leads instead.
 *
 * Ordering: requests of one lane are carried in arrival order, and groups are sent in
 * order; with maxInFlight > 1 two groups may reach the partition in either order, as two
 * independent HTTP requests may. (Idempotent producers order by sequence number anyway.)
 *
 * Pure: no Workers imports; the RPC is the injected `send`. Unit-tested in
 * test/unit/append-coalescer.test.ts.
 */
import type { AppendOk, AppendRequest } from "../partition/rpc.ts";
import { EdgelogError, type RpcResult } from "../protocol/errors.ts";
import { MAX_APPEND_GROUP_BYTES, MAX_APPEND_GROUP_REQUESTS } from "../protocol/limits.ts";

export type AppendOutcome = RpcResult<AppendOk>;

/** Sends one group of append requests in one RPC; answers one outcome per request, in order. */
export type SendGroup = (requests: AppendRequest[]) => Promise<AppendOutcome[]>;

export interface AppendCoalescerOptions {
  /** Most append RPCs in flight per lane from this isolate. @default 2 */
  maxInFlight: number;
  /**
   * Most request bytes (sum of batch bytes) one RPC carries; a request larger than this on
   * its own still goes, alone. @default MAX_APPEND_GROUP_BYTES (8 MiB)
   */
  maxGroupBytes: number;
  /** Most requests one RPC carries. @default MAX_APPEND_GROUP_REQUESTS (1000) */
  maxGroupRequests: number;
  /**
   * How long (ms) a queued request waits while its lane makes no progress (no RPC sent or
   * answered) before it leads an RPC itself, past maxInFlight. Covers a request that was
   * told to lead but was cancelled first. Harmless when the lane was merely slow: one more
   * RPC in flight, as without coalescing. @default 1000
   */
  stallMs: number;
  /**
   * How long (ms) a request carried by another request's RPC waits for its answer before it
   * fails with REQUEST_TIMED_OUT (retriable; the outcome is unknown, as for any timed-out
   * produce: idempotent producers retry safely). An RPC this old no longer counts against
   * maxInFlight. @default 120000
   */
  carriedTimeoutMs: number;
}

export const DEFAULT_APPEND_COALESCER_OPTIONS: AppendCoalescerOptions = {
  maxInFlight: 2,
  maxGroupBytes: MAX_APPEND_GROUP_BYTES,
  maxGroupRequests: MAX_APPEND_GROUP_REQUESTS,
  stallMs: 1000,
  carriedTimeoutMs: 120_000,
};

type EntryState = "queued" | "told" | "carried";

interface Entry {
  readonly request: AppendRequest;
  readonly bytes: number;
  /** Settled with this request's outcome by the RPC that carried it. */
  readonly outcome: Promise<AppendOutcome>;
  settle: (r: { outcome: AppendOutcome } | { error: unknown }) => void;
  /** Resolved when this request is told to lead an RPC, or carried (its waiter then re-reads `state`). */
  readonly turn: Promise<void>;
  tell: () => void;
  state: EntryState;
  /** When an RPC took this request (Date.now() ms). */
  carriedAtMs: number;
}

interface Lane {
  /** Requests not yet carried (queued or told to lead), oldest first. */
  queue: Entry[];
  /** Send times (Date.now() ms) of this lane's RPCs in flight. */
  inFlight: Set<{ sentAtMs: number }>;
  /** Requests told to lead that have not sent yet: each holds an in-flight slot. */
  told: number;
  /** Last time an RPC of this lane was sent or answered (Date.now() ms). */
  progressAtMs: number;
}

export interface CoalescerStats {
  /** Lanes with a request queued or an RPC in flight. */
  lanes: number;
  /** Requests waiting to be carried. */
  queued: number;
  /** RPCs in flight. */
  inFlight: number;
}

export class AppendCoalescer {
  readonly #lanes = new Map<string, Lane>();
  readonly #opts: AppendCoalescerOptions;

  constructor(options: Partial<AppendCoalescerOptions> = {}) {
    this.#opts = { ...DEFAULT_APPEND_COALESCER_OPTIONS, ...options };
  }

  /**
   * Appends `request` to the partition `lane` (e.g. `${topicId}/${partition}`), alone or
   * together with other requests for that lane, and returns its own outcome.
   * @param send the RPC; called from this request's context when it leads a group.
   * @param keepAlive called with the RPC's promise when this request leads (e.g. waitUntil).
   * @throws whatever `send` throws (a bug or a platform failure), to every request it
   *   carried; EdgelogError REQUEST_TIMED_OUT when a carried request's answer never came.
   */
  async append(lane: string, request: AppendRequest, send: SendGroup, keepAlive?: (p: Promise<unknown>) => void): Promise<AppendOutcome> {
    const l = this.#lane(lane);
    const entry = newEntry(request);
    l.queue.push(entry);
    if (this.#slotsUsed(l) < this.#opts.maxInFlight) this.#tell(l, entry);
    // Every timer here belongs to this request's own context: on Workers a timer (an I/O
    // object) cannot be set or cleared on behalf of another request.
    for (;;) {
      if (entry.state === "told") {
        await entry.turn;
        if (entry.state === "told") return this.#lead(lane, l, entry, send, keepAlive);
        continue; // carried by another leader meanwhile
      }
      // Queued: wait for a turn (told or carried), at most stallMs at a time. Carried: wait
      // for the outcome, up to carriedTimeoutMs after the RPC left.
      const carried = entry.state === "carried";
      const waitMs = carried ? entry.carriedAtMs + this.#opts.carriedTimeoutMs - Date.now() : this.#opts.stallMs;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = unref(setTimeout(() => resolve("timeout"), Math.max(0, waitMs)));
      });
      let first: AppendOutcome | "turn" | "timeout";
      try {
        first = await Promise.race([carried ? entry.outcome : entry.turn.then(() => "turn" as const), timeout]);
      } finally {
        clearTimeout(timer);
      }
      if (first === "turn") continue;
      if (first !== "timeout") return first;
      if (carried) throw carriedTimeout(this.#opts.carriedTimeoutMs);
      if (entry.state === "queued" && Date.now() - l.progressAtMs >= this.#opts.stallMs) {
        // No RPC of this lane sent or answered for stallMs: lead one, past maxInFlight.
        this.#tell(l, entry);
      }
    }
  }

  /** Current load (for tests and metrics). */
  stats(): CoalescerStats {
    let queued = 0;
    let inFlight = 0;
    for (const l of this.#lanes.values()) {
      queued += l.queue.length;
      inFlight += l.inFlight.size;
    }
    return { lanes: this.#lanes.size, queued, inFlight };
  }

  #lane(key: string): Lane {
    let l = this.#lanes.get(key);
    if (l === undefined) {
      l = { queue: [], inFlight: new Set(), told: 0, progressAtMs: Date.now() };
      this.#lanes.set(key, l);
    }
    return l;
  }

  /** Slots taken: RPCs in flight (younger than carriedTimeoutMs) plus leaders told to send. */
  #slotsUsed(l: Lane): number {
    const now = Date.now();
    for (const f of l.inFlight) if (now - f.sentAtMs >= this.#opts.carriedTimeoutMs) l.inFlight.delete(f);
    return l.inFlight.size + l.told;
  }

  #tell(l: Lane, e: Entry): void {
    e.state = "told";
    l.told++;
    l.progressAtMs = Date.now();
    e.tell();
  }

  async #lead(key: string, l: Lane, self: Entry, send: SendGroup, keepAlive?: (p: Promise<unknown>) => void): Promise<AppendOutcome> {
    // Carry this request first, then the oldest not-yet-carried requests, within the group
    // limits. A request told to lead but carried here gives its slot back (it will not send).
    l.told--;
    const group: Entry[] = [self];
    let bytes = self.bytes;
    l.queue.splice(l.queue.indexOf(self), 1);
    while (l.queue.length > 0) {
      const e = l.queue[0]!;
      if (group.length >= this.#opts.maxGroupRequests || bytes + e.bytes > this.#opts.maxGroupBytes) break;
      l.queue.shift();
      if (e.state === "told") l.told--;
      group.push(e);
      bytes += e.bytes;
    }
    const flight = { sentAtMs: Date.now() };
    for (const e of group) {
      e.state = "carried";
      e.carriedAtMs = flight.sentAtMs;
      e.tell(); // wakes a queued waiter to wait for its outcome instead
    }
    l.inFlight.add(flight);
    l.progressAtMs = flight.sentAtMs;
    try {
      // Inside the try: a send or keepAlive that throws instead of rejecting still fails
      // every carried request at once and frees the slot.
      const rpc = send(group.map((e) => e.request));
      keepAlive?.(rpc.catch(() => undefined));
      const outcomes = await rpc;
      if (outcomes.length !== group.length) throw new Error(`append RPC answered ${outcomes.length} outcomes for ${group.length} requests`);
      group.forEach((e, i) => {
        e.settle({ outcome: outcomes[i]! });
      });
    } catch (error) {
      for (const e of group) e.settle({ error });
    } finally {
      l.inFlight.delete(flight);
      l.progressAtMs = Date.now();
      this.#refill(key, l);
    }
    return self.outcome;
  }

  /** Tells the oldest queued requests to lead while slots are free; drops an idle lane. */
  #refill(key: string, l: Lane): void {
    for (const e of l.queue) {
      if (this.#slotsUsed(l) >= this.#opts.maxInFlight) break;
      if (e.state === "queued") this.#tell(l, e);
    }
    if (l.queue.length === 0 && l.inFlight.size === 0 && l.told === 0 && this.#lanes.get(key) === l) this.#lanes.delete(key);
  }
}

function newEntry(request: AppendRequest): Entry {
  let bytes = 0;
  for (const b of request.batches) bytes += b.byteLength;
  let resolveOutcome!: (o: AppendOutcome) => void;
  let rejectOutcome!: (e: unknown) => void;
  let resolveTurn!: () => void;
  const outcome = new Promise<AppendOutcome>((resolve, reject) => {
    resolveOutcome = resolve;
    rejectOutcome = reject;
  });
  const turn = new Promise<void>((resolve) => {
    resolveTurn = resolve;
  });
  const entry: Entry = {
    request,
    bytes,
    outcome,
    turn,
    tell: resolveTurn,
    state: "queued",
    carriedAtMs: 0,
    settle: (r) => ("outcome" in r ? resolveOutcome(r.outcome) : rejectOutcome(r.error)),
  };
  return entry;
}

/** Node: a timer must not hold the process open (Workers timers have no unref). */
function unref(t: ReturnType<typeof setTimeout>): ReturnType<typeof setTimeout> {
  (t as { unref?: () => void }).unref?.();
  return t;
}

/** The error of a carried request whose RPC never answered (see carriedTimeoutMs). */
function carriedTimeout(ms: number): EdgelogError {
  return new EdgelogError("REQUEST_TIMED_OUT", `The partition did not answer the append within ${ms} ms; its outcome is unknown.`);
}
