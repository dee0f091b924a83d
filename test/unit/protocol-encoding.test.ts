import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decodeBase64Strict, decodeField, encodeBase64, encodeField, EdgelogError, utf8 } from "../../src/protocol/index.ts";

describe("strict base64", () => {
  it("agrees with Node's Buffer on every byte string, padded and unpadded", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const padded = Buffer.from(bytes).toString("base64");
        expect(encodeBase64(bytes)).toBe(padded);
        expect(decodeBase64Strict(padded)).toEqual(bytes);
        expect(decodeBase64Strict(padded.replace(/=+$/, ""))).toEqual(bytes);
      }),
    );
  });

  it("rejects whitespace, URL-safe characters, bad padding and non-zero trailing bits", () => {
    for (const s of ["Q", "QQ=", "QQ===", "QUJD=", "Q===", "====", "QU JD", " QUJD", "QUJD\n", "QUJD\t", "-_8=", "QR==", "QUI=x", "QQ==QQ==", "é", "QUJ\u0000"]) {
      expect(decodeBase64Strict(s), JSON.stringify(s)).toBeNull();
    }
  });

  it("decodes the RFC 4648 test vectors", () => {
    const vectors: [string, string][] = [
      ["", ""],
      ["f", "Zg=="],
      ["fo", "Zm8="],
      ["foo", "Zm9v"],
      ["foob", "Zm9vYg=="],
      ["fooba", "Zm9vYmE="],
      ["foobar", "Zm9vYmFy"],
    ];
    for (const [plain, b64] of vectors) {
      expect(decodeBase64Strict(b64)).toEqual(utf8(plain));
      expect(encodeBase64(utf8(plain))).toBe(b64);
    }
  });
});

describe("field encodings", () => {
  it("null and absent are null; empty is empty", () => {
    for (const enc of ["string", "base64", "json"] as const) {
      expect(encodeField(null, enc, "f")).toBeNull();
      expect(encodeField(undefined, enc, "f")).toBeNull();
    }
    expect(encodeField("", "string", "f")).toEqual(new Uint8Array(0));
    expect(encodeField("", "base64", "f")).toEqual(new Uint8Array(0));
    expect(encodeField("", "json", "f")).toEqual(utf8('""'));
  });

  it("wrong JSON types are INVALID_REQUEST naming the field; bad base64 is INVALID_ENCODING", () => {
    const code = (f: () => unknown): [string, unknown] => {
      try {
        f();
      } catch (e) {
        if (e instanceof EdgelogError) return [e.code, e.details];
      }
      return ["none", undefined];
    };
    expect(code(() => encodeField(1, "string", "records[0].key"))).toEqual(["INVALID_REQUEST", { field: "records[0].key" }]);
    expect(code(() => encodeField({}, "base64", "v"))).toEqual(["INVALID_REQUEST", { field: "v" }]);
    expect(code(() => encodeField("a b", "base64", "v"))).toEqual(["INVALID_ENCODING", { field: "v" }]);
    expect(code(() => decodeField(utf8("{"), "json", "v"))).toEqual(["INVALID_ENCODING", { field: "v" }]);
  });

  it("round trips through each encoding", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), fc.uint8Array(), fc.jsonValue(), (s, bytes, j) => {
        expect(decodeField(encodeField(s, "string", "f"), "string", "f")).toBe(s);
        expect(decodeField(encodeField(encodeBase64(bytes), "base64", "f"), "base64", "f")).toBe(encodeBase64(bytes));
        if (j !== null) expect(decodeField(encodeField(j, "json", "f"), "json", "f")).toEqual(JSON.parse(JSON.stringify(j)));
      }),
    );
  });

  it("keeps a leading U+FEFF (no BOM stripping)", () => {
    expect(decodeField(encodeField("\uFEFFx", "string", "f"), "string", "f")).toBe("\uFEFFx");
  });
});
