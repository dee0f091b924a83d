/**
 * How stream bytes map onto Edgelog records, both ways (docs/DURABLE-STREAMS.md, "Records").
 *
 * - Byte streams (every content type but `application/json`): one append is one record
 *   whose value is the body; a body larger than one record may hold is split into several
 *   records of one record batch, cut on UTF-8 character boundaries so text never splits
 *   inside a character. A read returns the concatenated values.
 * - JSON streams: an append's body is one JSON value, and a top-level array is flattened
 *   one level (PROTOCOL.md 9.1.2); each message is one record whose value is the message's
 *   JSON text with insignificant whitespace removed. The text is otherwise kept byte for
 *   byte (no JSON.parse/stringify round trip), so numbers beyond 2^53 keep their digits.
 *   A read returns `[` + values joined by `,` + `]`.
 *
 * Read answers are assembled in src/streams/body.ts.
 *
 * Pure module: no Workers imports.
 */

const utf8Strict = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const utf8 = new TextEncoder();

/** Outcome of {@link jsonMessages}. */
export type JsonMessagesResult = { ok: true; messages: Uint8Array[] } | { ok: false; reason: "invalid-json" | "empty-array"; message: string };

/**
 * Validates a JSON-mode body and splits it into messages.
 *
 * @param body the request body (UTF-8 JSON)
 * @param allowEmptyArray true for PUT (`[]` creates an empty stream), false for POST
 *   (`[]` is rejected, PROTOCOL.md 9.1.3)
 * @returns one UTF-8 buffer per message, or why the body is rejected: not UTF-8 / not JSON
 *   (`invalid-json`), or an empty top-level array on POST (`empty-array`)
 */
export function jsonMessages(body: Uint8Array, allowEmptyArray: boolean): JsonMessagesResult {
  let text: string;
  try {
    text = utf8Strict.decode(body);
    // Validation only: the engine's parser is the reference for what is JSON.
    JSON.parse(text);
  } catch {
    return { ok: false, reason: "invalid-json", message: "The body is not valid UTF-8 JSON." };
  }
  const parts = splitTopLevel(text);
  if (parts.length === 0 && !allowEmptyArray) {
    return { ok: false, reason: "empty-array", message: "An append must not be an empty JSON array." };
  }
  return { ok: true, messages: parts.map((p) => utf8.encode(p)) };
}

function isJsonSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

/**
 * Splits already-validated JSON text into its messages: the elements of a top-level
 * array, or the single value. Whitespace outside strings is dropped.
 */
function splitTopLevel(text: string): string[] {
  let i = 0;
  while (i < text.length && isJsonSpace(text.charCodeAt(i))) i++;
  const topIsArray = text.charCodeAt(i) === 0x5b; // [
  const out: string[] = [];
  let cur = "";
  let depth = 0;
  let inString = false;
  let escaped = false;
  let runStart = i; // start of the current run of characters copied verbatim
  const flush = (end: number) => {
    cur += text.slice(runStart, end);
  };
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c)
        escaped = true; // backslash
      else if (c === 0x22) inString = false; // quote
      continue;
    }
    if (c === 0x22) {
      inString = true;
    } else if (isJsonSpace(c)) {
      flush(i);
      runStart = i + 1;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (topIsArray && depth === 1) {
        // The top-level '[' itself is not part of any message.
        runStart = i + 1;
      }
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
      if (topIsArray && depth === 0) {
        flush(i);
        if (cur !== "") out.push(cur);
        cur = "";
        runStart = i + 1;
      }
    } else if (c === 0x2c && topIsArray && depth === 1) {
      flush(i);
      out.push(cur);
      cur = "";
      runStart = i + 1;
    }
  }
  if (!topIsArray) {
    flush(text.length);
    out.push(cur);
  }
  return out;
}

/**
 * Splits a byte-stream body into record values of at most `maxValueBytes` bytes, cutting
 * before a UTF-8 continuation byte when possible (at most 3 bytes back) so text streams
 * never split a character across records.
 * @param maxValueBytes >= 4
 */
export function splitBody(body: Uint8Array, maxValueBytes: number): Uint8Array[] {
  if (maxValueBytes < 4) throw new RangeError("maxValueBytes must be at least 4");
  if (body.length <= maxValueBytes) return [body];
  const out: Uint8Array[] = [];
  let start = 0;
  while (start < body.length) {
    let end = Math.min(start + maxValueBytes, body.length);
    if (end < body.length) {
      let cut = end;
      // 0b10xxxxxx is a continuation byte: the character started earlier.
      while (cut > end - 3 && cut > start + 1 && ((body[cut] as number) & 0xc0) === 0x80) cut--;
      if (((body[cut] as number) & 0xc0) !== 0x80) end = cut;
    }
    out.push(body.subarray(start, end));
    start = end;
  }
  return out;
}

/** Where a fork diverges from its source, resolved from (offset, sub-offset). */
export interface ForkPoint {
  /** Edgelog offset where the fork's own log starts: records below it are read from the source. */
  forkOffset: number;
  /**
   * For a byte sub-offset that lands inside a record: the first `prefix.length` bytes of the
   * source record at `forkOffset`, materialized as the fork's first own record.
   */
  prefix: Uint8Array | null;
}

/**
 * Resolves `Stream-Fork-Sub-Offset` (PROTOCOL.md 4.2) against the records that follow the
 * anchor up to the next data boundary (the end of the record batch holding the anchor).
 *
 * @param anchor Edgelog offset of `Stream-Fork-Offset`
 * @param values values of the records [anchor, boundary), in order (empty at the tail)
 * @param subOffset messages (JSON) or bytes (otherwise) to inherit past the anchor
 * @param json true for JSON-mode streams
 * @returns the fork point, or null when the sub-offset overshoots the boundary
 */
export function resolveSubOffset(anchor: number, values: readonly (Uint8Array | null)[], subOffset: number, json: boolean): ForkPoint | null {
  if (json) {
    return subOffset <= values.length ? { forkOffset: anchor + subOffset, prefix: null } : null;
  }
  let remaining = subOffset;
  let j = 0;
  while (remaining > 0 && j < values.length) {
    const len = values[j]?.length ?? 0;
    if (remaining < len) {
      return { forkOffset: anchor + j, prefix: (values[j] as Uint8Array).slice(0, remaining) };
    }
    remaining -= len;
    j++;
  }
  return remaining === 0 ? { forkOffset: anchor + j, prefix: null } : null;
}
