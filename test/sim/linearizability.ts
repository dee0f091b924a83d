/**
 * A small linearizability checker (Wing & Gong's search with Lowe's memoisation, the
 * algorithm of Knossos' "wgl" and Porcupine). No npm package of this kind exists that fits, so
 * it is ours, tested on known linearizable and non-linearizable histories
 * (test/sim/linearizability.test.ts).
 *
 * A history is a list of completed operations with call and return instants (any totally
 * ordered numbers, e.g. the simulator's event sequence); an operation whose outcome is unknown
 * (the client timed out, the member crashed) has `ret = Infinity`: it may have taken effect at
 * any point after its call, or never (linearizing it last is the same as never).
 *
 * Linearizability is local (Herlihy & Wing): a key-value history is linearizable iff each
 * key's sub-history is, so callers split by key ({@link checkKv}) and keep each search small.
 */

/** A sequential specification: `step` answers whether `output` is what `input` gives in `state`, and the next state. */
export interface Model<S, I, O> {
  init: S;
  step(state: S, input: I, output: O): [boolean, S];
  /** A string that identifies the state (for memoisation). */
  key(state: S): string;
}

export interface Operation<I, O> {
  input: I;
  output: O;
  call: number;
  ret: number;
}

interface Node {
  opId: number;
  isCall: boolean;
  match: Node | null;
  prev: Node | null;
  next: Node | null;
}

/** True when `ops` has a linearization under `model`. Exponential in the worst case; fine for per-key histories of a few hundred operations. */
export function isLinearizable<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[]): boolean {
  const n = ops.length;
  if (n === 0) return true;
  const events: { t: number; opId: number; isCall: boolean; tie: number }[] = [];
  ops.forEach((op, i) => {
    if (!(op.ret > op.call)) throw new Error(`operation ${i}: return ${op.ret} not after call ${op.call}`);
    events.push({ t: op.call, opId: i, isCall: true, tie: 0 });
    events.push({ t: op.ret, opId: i, isCall: false, tie: 1 });
  });
  // At equal instants calls come first: overlapping is the weaker (safe) reading.
  events.sort((a, b) => a.t - b.t || a.tie - b.tie || a.opId - b.opId);

  const head: Node = { opId: -1, isCall: false, match: null, prev: null, next: null };
  let tail = head;
  const calls: Node[] = new Array(n);
  for (const ev of events) {
    const node: Node = { opId: ev.opId, isCall: ev.isCall, match: null, prev: tail, next: null };
    tail.next = node;
    tail = node;
    if (ev.isCall) calls[ev.opId] = node;
    else calls[ev.opId]!.match = node;
  }

  const lift = (call: Node) => {
    call.prev!.next = call.next;
    if (call.next) call.next.prev = call.prev;
    const ret = call.match!;
    ret.prev!.next = ret.next;
    if (ret.next) ret.next.prev = ret.prev;
  };
  const unlift = (call: Node) => {
    const ret = call.match!;
    ret.prev!.next = ret;
    if (ret.next) ret.next.prev = ret;
    call.prev!.next = call;
    if (call.next) call.next.prev = call;
  };

  const words = new Uint32Array(Math.ceil(n / 32));
  const cache = new Set<string>();
  const stack: { call: Node; state: S }[] = [];
  let state = model.init;
  let entry = head.next;
  while (head.next !== null) {
    if (entry === null) return false;
    if (entry.isCall) {
      const op = ops[entry.opId]!;
      const [ok, next] = model.step(state, op.input, op.output);
      if (ok) {
        words[entry.opId >> 5]! ^= 1 << (entry.opId & 31);
        const key = `${words.join(",")}|${model.key(next)}`;
        if (!cache.has(key)) {
          cache.add(key);
          stack.push({ call: entry, state });
          state = next;
          lift(entry);
          entry = head.next;
          continue;
        }
        words[entry.opId >> 5]! ^= 1 << (entry.opId & 31);
      }
      entry = entry.next;
    } else {
      // A return reached before its call was linearized: undo the last choice.
      const top = stack.pop();
      if (top === undefined) return false;
      state = top.state;
      words[top.call.opId >> 5]! ^= 1 << (top.call.opId & 31);
      unlift(top.call);
      entry = top.call.next;
    }
  }
  return true;
}

/** Register operations of the simulator's key-value store. */
export type KvInput = { type: "put"; key: string; value: string } | { type: "get"; key: string };
/** A get's answer (null: no value); ignored for puts. */
export type KvOutput = string | null;

export const registerModel: Model<string | null, KvInput, KvOutput> = {
  init: null,
  step(state, input, output) {
    if (input.type === "put") return [true, input.value];
    return [output === state, state];
  },
  key(state) {
    return state === null ? "\u0000" : state;
  },
};

/** Checks a key-value history key by key. Returns the first key whose history is not linearizable, or null. */
export function checkKv(ops: readonly Operation<KvInput, KvOutput>[]): string | null {
  const byKey = new Map<string, Operation<KvInput, KvOutput>[]>();
  for (const op of ops) {
    const list = byKey.get(op.input.key);
    if (list) list.push(op);
    else byKey.set(op.input.key, [op]);
  }
  for (const [key, list] of byKey) {
    if (!isLinearizable(registerModel, list)) return key;
  }
  return null;
}
