/**
 * Durable Streams offset tokens <-> Edgelog offsets (docs/DURABLE-STREAMS.md, "Offsets").
 *
 * A position in a stream is the Edgelog offset of the next record (0 = before the first
 * record, logEndOffset = the tail). Its token is that offset as 16 zero-padded decimal
 * digits, an underscore, and 16 zeros: `0000000000000042_0000000000000000`.
 *
 * - Fixed width makes byte-wise (lexicographic) order equal numeric order, which the
 *   protocol requires (PROTOCOL.md section 8, "Lexicographically Sortable").
 * - The shape `<16 digits>_<16 digits>` is the one the reference server and the
 *   conformance suite use; the suite sends the literal `0000000000000000_0000000000000000`
 *   as "the start of the stream", so we accept exactly that shape.
 * - The second field is reserved: always 0 in tokens this server issues, and ignored on
 *   input (a record is never split between two positions, so it carries nothing today).
 * - 16 digits hold every offset below 2^53 (9007199254740992 has 16 digits).
 *
 * Pure module: no Workers imports.
 */

/** Decimal digits of each field of an offset token. */
export const OFFSET_FIELD_DIGITS = 16;

/** Token of offset 0, the start of every stream. */
export const START_TOKEN = "0000000000000000_0000000000000000";

/** Sentinel for "the beginning of the stream" (PROTOCOL.md section 8). */
export const OFFSET_BEGINNING = "-1";
/** Sentinel for "the current tail" (PROTOCOL.md section 8). */
export const OFFSET_NOW = "now";

const TOKEN = /^(\d{16})_(\d{16})$/;
const RESERVED_FIELD = "0".repeat(OFFSET_FIELD_DIGITS);

/**
 * The token of an Edgelog offset.
 * @param offset non-negative safe integer (records before the position)
 * @throws RangeError for a negative, fractional or unsafe offset (a bug, never user input)
 */
export function encodeOffset(offset: number): string {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`Invalid Edgelog offset ${offset}`);
  return `${String(offset).padStart(OFFSET_FIELD_DIGITS, "0")}_${RESERVED_FIELD}`;
}

/**
 * The Edgelog offset of a token, or null if `token` is not a well-formed token.
 * Does not know the stream: the caller checks the offset against the log bounds.
 */
export function decodeOffset(token: string): number | null {
  const m = TOKEN.exec(token);
  if (m === null) return null;
  const n = Number(m[1]);
  return Number.isSafeInteger(n) ? n : null;
}

/** A parsed `offset` query parameter. */
export type OffsetSpec = { kind: "beginning" } | { kind: "now" } | { kind: "offset"; offset: number };

/**
 * Parses the `offset` query parameter of a read.
 *
 * @param values every value of `offset` in the query string (`URLSearchParams.getAll`)
 * @returns the spec, `{kind: "beginning"}` when the parameter is absent, or an error string
 *   for: an empty value, more than one value, or anything that is not `-1`, `now` or a token
 *   (PROTOCOL.md section 5.6: 400 for a malformed offset).
 */
export function parseOffsetParam(values: readonly string[]): OffsetSpec | { error: string } {
  if (values.length === 0) return { kind: "beginning" };
  if (values.length > 1) return { error: "The offset parameter must be given at most once." };
  const v = values[0] as string;
  if (v === "") return { error: "The offset parameter must not be empty." };
  if (v === OFFSET_BEGINNING) return { kind: "beginning" };
  if (v === OFFSET_NOW) return { kind: "now" };
  const offset = decodeOffset(v);
  if (offset === null) {
    return { error: `Malformed offset ${JSON.stringify(v.slice(0, 64))}: use -1, now, or a Stream-Next-Offset value.` };
  }
  return { kind: "offset", offset };
}
