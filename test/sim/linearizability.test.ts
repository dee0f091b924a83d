/**
 * The linearizability checker on known histories: it must accept the linearizable ones and
 * reject the others (a checker that accepts everything would make the simulation vacuous).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkKv, isLinearizable, registerModel, type KvInput, type KvOutput, type Operation } from "./linearizability.ts";

type Op = Operation<KvInput, KvOutput>;
const put = (value: string, call: number, ret: number, key = "x"): Op => ({ input: { type: "put", key, value }, output: null, call, ret });
const get = (output: string | null, call: number, ret: number, key = "x"): Op => ({ input: { type: "get", key }, output, call, ret });
const lin = (ops: Op[]) => isLinearizable(registerModel, ops);

describe("linearizability checker (WGL) on a register", () => {
  it("accepts the empty and sequential histories", () => {
    expect(lin([])).toBe(true);
    expect(lin([get(null, 0, 1), put("1", 2, 3), get("1", 4, 5), put("2", 6, 7), get("2", 8, 9)])).toBe(true);
  });

  it("rejects a read of a value never written, and a stale read after a completed write", () => {
    expect(lin([put("1", 0, 1), get("7", 2, 3)])).toBe(false);
    expect(lin([put("1", 0, 1), put("2", 2, 3), get("1", 4, 5)])).toBe(false);
  });

  it("lets a write concurrent with reads take effect anywhere in its interval, but only once", () => {
    expect(lin([put("1", 0, 10), get(null, 1, 2), get("1", 3, 4)])).toBe(true);
    expect(lin([put("1", 0, 10), get("1", 1, 2), get(null, 3, 4)])).toBe(false);
  });

  it("orders concurrent writes once: reads may not see them in both orders", () => {
    expect(lin([put("1", 0, 5), put("2", 0, 5), get("1", 3, 7), get("2", 4, 9)])).toBe(true);
    expect(lin([put("1", 0, 5), put("2", 0, 5), get("1", 6, 7), get("2", 8, 9)])).toBe(false);
    expect(lin([put("1", 0, 5), put("2", 0, 5), get("2", 1, 2), get("1", 3, 4), get("2", 10, 11)])).toBe(false);
  });

  it("treats an unanswered write (ret = Infinity) as taking effect at any point after its call, or never", () => {
    expect(lin([put("1", 0, Infinity), get("1", 5, 6)])).toBe(true);
    expect(lin([put("1", 0, Infinity), get(null, 5, 6), get("1", 7, 8)])).toBe(true);
    expect(lin([put("1", 0, Infinity), get("1", 5, 6), get(null, 7, 8)])).toBe(false);
    expect(lin([put("1", 3, Infinity), get("1", 0, 2)])).toBe(false); // not before its call
  });

  it("checks a key-value history key by key and names the bad key", () => {
    const ops = [put("1", 0, 1, "x"), get("1", 2, 3, "x"), put("a", 0, 1, "y"), put("b", 2, 3, "y"), get("a", 4, 5, "y")];
    expect(checkKv(ops)).toBe("y");
    expect(checkKv(ops.slice(0, 4))).toBeNull();
  });

  it("accepts every history produced by a real register with linearization points inside the intervals, and rejects it with one read corrupted", () => {
    const opArb = fc.record({ isPut: fc.boolean(), start: fc.integer({ min: 0, max: 100 }), len: fc.integer({ min: 1, max: 30 }), at: fc.double({ min: 0, max: 1, noNaN: true }) });
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 14 }), (specs) => {
        // Each op takes effect at a distinct instant inside its [call, ret] interval.
        const ops = specs.map((s, i) => ({ ...s, i, point: s.start + s.len * (0.05 + 0.9 * s.at) + i * 1e-6 }));
        const byPoint = [...ops].sort((a, b) => a.point - b.point);
        let state: string | null = null;
        const history: Op[] = new Array(ops.length);
        for (const o of byPoint) {
          if (o.isPut) {
            state = `v${o.i}`;
            history[o.i] = put(state, o.start, o.start + o.len);
          } else {
            history[o.i] = get(state, o.start, o.start + o.len);
          }
        }
        expect(lin(history)).toBe(true);
        const readIdx = history.findIndex((h) => h.input.type === "get");
        if (readIdx >= 0) {
          const bad = [...history];
          bad[readIdx] = { ...bad[readIdx]!, output: "never-written" };
          expect(lin(bad)).toBe(false);
        }
      }),
      { numRuns: 300, seed: 11 },
    );
  });
});
