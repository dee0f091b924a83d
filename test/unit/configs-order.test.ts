/**
 * The ordering rule of config pushes (src/partition/configs-order.ts; docs/RAFT.md "Config
 * pushes carry their record index"): a push older than the configs held is ignored, an equal or
 * newer one applies, a push without an offset (MetadataDO) always applies. Property: applying
 * any order of offset-carrying pushes by the rule ends at the newest one.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStaleConfigsPush } from "../../src/partition/configs-order.ts";

describe("isStaleConfigsPush", () => {
  it("ignores only a push older than the held offset", () => {
    expect(isStaleConfigsPush(10, 9)).toBe(true);
    expect(isStaleConfigsPush(10, 10)).toBe(false);
    expect(isStaleConfigsPush(10, 11)).toBe(false);
  });

  it("applies a push without an offset, and any push when none is held", () => {
    expect(isStaleConfigsPush(10, undefined)).toBe(false);
    expect(isStaleConfigsPush(null, 1)).toBe(false);
    expect(isStaleConfigsPush(null, undefined)).toBe(false);
  });

  it("in any delivery order, the configs held at the end are the newest pushed", () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 20 }), fc.boolean(), (offsets, heldAtStart) => {
        let held: number | null = heldAtStart ? 0 : null;
        let configs = "init";
        for (const o of offsets) {
          if (isStaleConfigsPush(held, o)) continue;
          held = o;
          configs = `c${o}`;
        }
        expect(configs).toBe(`c${Math.max(...offsets)}`);
        expect(held).toBe(Math.max(...offsets));
      }),
    );
  });
});
