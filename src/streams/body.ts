/**
 * The body of a read answer, assembled as a list of byte pieces (docs/DURABLE-STREAMS.md,
 * "Records" and "Reads"): byte streams concatenate their records' values; JSON streams send
 * `[` + the values joined by `,` + `]`, a null or empty value (possible only for records
 * produced through the native API) reading as `null`.
 *
 * Pieces are views, not copies: values read from storage, and ranges of the tail cache
 * (src/streams/byte-cache.ts), which a JSON stream's cache stores already followed by `,`.
 * The answer is then either one buffer ({@link concatPieces}) or a stream of chunks
 * ({@link chunkPieces}) that passes large pieces on as they are and is produced as it is
 * sent: values from storage are read as the reader pulls them.
 *
 * Pure module: no Workers imports.
 */

const utf8 = new TextEncoder();
const OPEN = utf8.encode("[");
const CLOSE = utf8.encode("]");
const COMMA = utf8.encode(",");
const NULL_JSON = utf8.encode("null");

/** The separator a stream's tail cache stores after each value: `,` for JSON streams. */
export function cacheSeparator(json: boolean): Uint8Array {
  return json ? COMMA : new Uint8Array(0);
}

/** A run of consecutive records of a read answer, in record order. */
export type AnswerPart =
  /** Values one by one (a lazy iterable is fine: it is consumed as the answer is sent). */
  | { kind: "values"; values: Iterable<Uint8Array | null> }
  /**
   * Bytes in the tail cache's layout (src/streams/byte-cache.ts): the values back to back,
   * each followed by `,` in a JSON stream. At least one record.
   */
  | { kind: "stored"; pieces: readonly Uint8Array[] };

/**
 * The pieces of a read answer holding `parts`, in order: views of the values and of the
 * cached bytes, plus `[`, `,` and `]` for JSON streams; nothing is copied. Lazy: values
 * iterables are consumed only as far as the pieces are.
 */
export function* answerPieces(parts: Iterable<AnswerPart>, json: boolean): Generator<Uint8Array> {
  if (json) yield OPEN;
  let first = true;
  for (const part of parts) {
    if (part.kind === "values") {
      for (const v of part.values) {
        if (json) {
          if (!first) yield COMMA;
          yield v === null || v.length === 0 ? NULL_JSON : v;
        } else if (v !== null && v.length > 0) {
          yield v;
        }
        first = false;
      }
    } else {
      if (part.pieces.length === 0) continue;
      if (!json) {
        yield* part.pieces;
      } else {
        // Stored as `v0,v1,...,vn,`: a comma before it unless it comes first, none after it.
        if (!first) yield COMMA;
        const last = part.pieces.length - 1;
        for (let i = 0; i < last; i++) yield part.pieces[i] as Uint8Array;
        const p = part.pieces[last] as Uint8Array;
        if (p.length > 1) yield p.subarray(0, p.length - 1);
      }
      first = false;
    }
  }
  if (json) yield CLOSE;
}

/** Total length of `pieces`. */
export function piecesLength(pieces: readonly Uint8Array[]): number {
  let n = 0;
  for (const p of pieces) n += p.length;
  return n;
}

/** One buffer holding `pieces` back to back (a fresh copy, exactly sized). */
export function concatPieces(pieces: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(piecesLength(pieces));
  let pos = 0;
  for (const p of pieces) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

/**
 * The chunks to send `pieces` as, in order: a piece of at least `direct` bytes goes as it is
 * (no copy); runs of smaller pieces are copied together into chunks of up to `target` bytes,
 * so a stream of small values is not sent as one tiny write per value.
 */
export function* chunkPieces(pieces: Iterable<Uint8Array>, target: number, direct: number): Generator<Uint8Array> {
  let run: Uint8Array[] = [];
  let runBytes = 0;
  for (const p of pieces) {
    if (p.length >= direct || runBytes + p.length > target) {
      if (runBytes > 0) yield run.length === 1 ? (run[0] as Uint8Array) : concatPieces(run);
      run = [];
      runBytes = 0;
    }
    if (p.length >= direct) {
      yield p;
    } else {
      run.push(p);
      runBytes += p.length;
    }
  }
  if (runBytes > 0) yield run.length === 1 ? (run[0] as Uint8Array) : concatPieces(run);
}
