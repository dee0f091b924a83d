import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BodyBuilder, cacheSeparator, chunkPieces, concatPieces, piecesLength } from "../../src/streams/body.ts";
import { ByteCache } from "../../src/streams/byte-cache.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const text = (pieces: readonly Uint8Array[]) => dec.decode(concatPieces(pieces));

describe("BodyBuilder", () => {
  it("concatenates a byte stream's values, skipping nulls", () => {
    const b = new BodyBuilder(false);
    b.addValue(enc.encode("ab"));
    b.addValue(null);
    b.addValue(enc.encode("c"));
    expect(text(b.finish())).toBe("abc");
    expect([b.count, b.bytes]).toEqual([3, 3]);
  });

  it("frames JSON values as one array, null and empty values as null", () => {
    expect(text(new BodyBuilder(true).finish())).toBe("[]");
    const b = new BodyBuilder(true);
    for (const v of [enc.encode(`{"a":1}`), null, new Uint8Array(0), enc.encode("2")]) b.addValue(v);
    expect(text(b.finish())).toBe(`[{"a":1},null,null,2]`);
    expect(b.count).toBe(4);
  });

  it("takes tail-cache ranges as they are stored (JSON: each value followed by a comma)", () => {
    const cache = new ByteCache(1 << 20);
    cache.append(5, ["1", `"x"`, "[3]"].map((s) => enc.encode(s)), cacheSeparator(true));
    const b = new BodyBuilder(true);
    b.addValue(enc.encode("0")); // from storage, before the cache
    const views: Uint8Array[] = [];
    cache.views(5, 8, views);
    b.addStored(views, 3);
    expect(text(b.finish())).toBe(`[0,1,"x",[3]]`);
    expect(b.count).toBe(4);

    const only = new BodyBuilder(true);
    const v2: Uint8Array[] = [];
    cache.views(6, 7, v2);
    only.addStored(v2, 1);
    expect(JSON.parse(text(only.finish()))).toEqual(["x"]);
  });

  it("matches the records it was given, whatever mix of sources (property)", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.array(fc.integer({ min: 0, max: 99 }), { maxLength: 4 })), { maxLength: 12 }), fc.boolean(), (parts, json) => {
        const b = new BodyBuilder(json);
        const expected: string[] = [];
        let offset = 0;
        for (const [fromCache, nums] of parts) {
          const vals = nums.map((n) => enc.encode(String(n)));
          if (fromCache && vals.length > 0) {
            const c = new ByteCache(1 << 20);
            c.append(offset, vals, cacheSeparator(json));
            const views: Uint8Array[] = [];
            c.views(offset, offset + vals.length, views);
            b.addStored(views, vals.length);
          } else {
            for (const v of vals) b.addValue(v);
          }
          offset += vals.length;
          expected.push(...nums.map(String));
        }
        const out = text(b.finish());
        expect(out).toBe(json ? `[${expected.join(",")}]` : expected.join(""));
        expect(b.count).toBe(expected.length);
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
