/**
 * The body of a read answer, assembled as a list of byte pieces (docs/DURABLE-STREAMS.md,
 * "Records" and "Reads"): byte streams concatenate their records' values; JSON streams send
 * `[` + the values joined by `,` + `]`, a null or empty value (possible only for records
 * produced through the native API) reading as `null`.
 *
 * Pieces are views, not copies: values read from storage, and ranges of the tail cache
 * (src/streams/byte-cache.ts), which a JSON stream's cache stores already followed by `,`.
 * The answer is then either one buffer ({@link concatPieces}) or a stream of chunks
 * ({@link chunkPieces}) that passes large pieces on as they are.
 *
 * Pure module: no Workers imports.
 */

const utf8 = new TextEncoder();
const OPEN = utf8.encode("[");
const CLOSE = utf8.encode("]");
const COMMA = utf8.encode(",");
const NULL_JSON = utf8.encode("null");
const EMPTY_JSON = utf8.encode("[]");

/** The separator a stream's tail cache stores after each value: `,` for JSON streams. */
export function cacheSeparator(json: boolean): Uint8Array {
  return json ? COMMA : new Uint8Array(0);
}

/** Collects a read answer's pieces in order. */
export class BodyBuilder {
  readonly #json: boolean;
  readonly #pieces: Uint8Array[] = [];
  #bytes = 0;
  #count = 0;

  constructor(json: boolean) {
    this.#json = json;
  }

  /** Records added so far. */
  get count(): number {
    return this.#count;
  }

  /** Value bytes (and JSON separators) added so far. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Adds one record's value (a view is fine: it is not copied). */
  addValue(value: Uint8Array | null): void {
    if (this.#json) {
      this.#push(value === null || value.length === 0 ? NULL_JSON : value);
      this.#push(COMMA);
    } else if (value !== null) {
      this.#push(value);
    }
    this.#count++;
  }

  /**
   * Adds `records` records whose bytes are `pieces`, already in this builder's form: the
   * values back to back, each followed by `,` in a JSON stream (the tail cache's layout).
   */
  addStored(pieces: readonly Uint8Array[], records: number): void {
    for (const p of pieces) this.#push(p);
    this.#count += records;
  }

  /** The answer's pieces: for JSON, `[`, the values with the last `,` dropped, `]`. */
  finish(): Uint8Array[] {
    if (!this.#json) return this.#pieces;
    if (this.#count === 0) return [EMPTY_JSON];
    const last = this.#pieces.pop() as Uint8Array; // ends with the last value's `,`
    if (last.length > 1) this.#pieces.push(last.subarray(0, last.length - 1));
    return [OPEN, ...this.#pieces, CLOSE];
  }

  #push(p: Uint8Array): void {
    if (p.length === 0) return;
    this.#pieces.push(p);
    this.#bytes += p.length;
  }
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
export function* chunkPieces(pieces: readonly Uint8Array[], target: number, direct: number): Generator<Uint8Array> {
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
