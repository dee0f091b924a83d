import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { answerPieces, cacheSeparator, chunkPieces, concatPieces, piecesLength, type AnswerPart } from "../../src/streams/body.ts";
import { ByteCache } from "../../src/streams/byte-cache.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const text = (pieces: readonly Uint8Array[]) => dec.decode(concatPieces(pieces));

describe("answerPieces", () => {
  const values = (vs: (string | null)[]): AnswerPart => ({ kind: "values", values: vs.map((v) => (v === null ? null : enc.encode(v))) });
  /** Tail-cache bytes of `vs` (JSON: each followed by a comma). */
  const stored = (vs: string[], json: boolean, from = 0): AnswerPart => {
    const c = new ByteCache(1 << 20);
    c.append(
      from,
      vs.map((v) => enc.encode(v)),
      cacheSeparator(json),
    );
    const pieces: Uint8Array[] = [];
    c.views(from, from + vs.length, pieces);
    return { kind: "stored", pieces };
  };

  it("concatenates a byte stream's values, skipping nulls", () => {
    expect(text([...answerPieces([values(["ab", null, "c"]), stored(["d", "ef"], false)], false)])).toBe("abcdef");
    expect(text([...answerPieces([], false)])).toBe("");
  });

  it("frames JSON values as one array, null and empty values as null", () => {
    expect(text([...answerPieces([], true)])).toBe("[]");
    expect(text([...answerPieces([values([`{"a":1}`, null, "", "2"])], true)])).toBe(`[{"a":1},null,null,2]`);
  });

  it("takes tail-cache ranges as they are stored (JSON: each value followed by a comma)", () => {
    expect(text([...answerPieces([values(["0"]), stored(["1", `"x"`, "[3]"], true, 5)], true)])).toBe(`[0,1,"x",[3]]`);
    expect(text([...answerPieces([stored([`"x"`], true)], true)])).toBe(`["x"]`);
    expect(text([...answerPieces([stored(["1"], true), values(["2"]), stored(["3", "4"], true)], true)])).toBe(`[1,2,3,4]`);
  });

  it("consumes lazy values only as far as the pieces are taken", () => {
    let pulled = 0;
    function* lazy(): Generator<Uint8Array> {
      for (let i = 0; i < 3; i++) {
        pulled++;
        yield enc.encode(String(i));
      }
    }
    const it = answerPieces([{ kind: "values", values: lazy() }], false);
    expect(pulled).toBe(0);
    it.next();
    expect(pulled).toBe(1);
    expect(text([...it])).toBe("12");
  });

  it("matches the records it was given, whatever mix of sources (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 4 })), { maxLength: 12 }), fc.boolean(), (parts, json) => {
        const answer: AnswerPart[] = [];
        const expected: string[] = [];
        for (const [fromCache, nums] of parts) {
          const vs = nums.map(String);
          if (fromCache && vs.length > 0) answer.push(stored(vs, json));
          else answer.push(values(vs));
          expected.push(...vs);
        }
        const out = text([...answerPieces(answer, json)]);
        expect(out).toBe(json ? `[${expected.join(",")}]` : expected.join(""));
      }),
    );
  });
});

describe("chunkPieces", () => {
  const piece = (n: number, fill = n % 256) => new Uint8Array(n).fill(fill);

  it("passes large pieces through as they are and copies runs of small ones together", () => {
    const big = piece(100);
    const small = [piece(3), piece(4), piece(5)];
    const chunks = [...chunkPieces([small[0] as Uint8Array, small[1] as Uint8Array, big, small[2] as Uint8Array], 8, 50)];
    expect(chunks.map((c) => c.length)).toEqual([7, 100, 5]);
    expect(chunks[1]).toBe(big); // no copy
    expect(chunks[2]).toBe(small[2]); // a run of one is not copied either
  });

  it("keeps every byte in order, chunks of small pieces within the target (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 40 }), { maxLength: 30 }), fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 60 }), (lens, target, direct) => {
        const pieces = lens.map((n, i) => piece(n, i));
        const chunks = [...chunkPieces(pieces, target, direct)];
        expect(concatPieces(chunks)).toEqual(concatPieces(pieces));
        expect(piecesLength(chunks)).toBe(piecesLength(pieces));
        for (const c of chunks) {
          expect(c.length).toBeGreaterThan(0);
          if (c.length > target) expect(pieces).toContain(c); // only a single piece may exceed the target
        }
      }),
    );
  });
});
