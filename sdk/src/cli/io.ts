/**
 * Bytes in and out: stdin split into lines, stdout with back-pressure and EPIPE handling, and
 * the streams `main()` runs on, and the stop signals of a command that runs until stopped.
 */
import process from "node:process";

/** The streams main() uses (process's by default). */
export interface CliIo {
  stdin: AsyncIterable<Uint8Array>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: Readonly<Record<string, string | undefined>>;
  /** fetch implementation (tests). @default globalThis.fetch */
  fetch?: typeof fetch;
}

/**
 * Splits a byte stream into lines at `\n` (0x0A) only: a line is its exact bytes without the
 * newline (a `\r` stays), the last line needs no newline, and a final newline makes no extra
 * empty line. Lines are copies, independent of the input chunks.
 */
export class LineSplitter {
  /** Bytes of an unfinished line, from earlier chunks. */
  #rest: Uint8Array[] = [];

  /** Feeds a chunk; returns the lines it completed (views of one copy of the chunk). */
  push(chunk: Uint8Array): Uint8Array[] {
    const lines: Uint8Array[] = [];
    let nl = chunk.indexOf(0x0a);
    if (nl === -1) {
      if (chunk.length > 0) this.#rest.push(chunk.slice());
      return lines;
    }
    // One copy per chunk, not per line: lines are views of it (cheap for many short lines).
    const own = chunk.slice();
    let start = 0;
    if (this.#rest.length > 0) {
      lines.push(concat([...this.#rest, own.subarray(0, nl)]));
      this.#rest = [];
      start = nl + 1;
      nl = own.indexOf(0x0a, start);
    }
    for (; nl !== -1; nl = own.indexOf(0x0a, start)) {
      lines.push(own.subarray(start, nl));
      start = nl + 1;
    }
    if (start < own.length) this.#rest.push(own.subarray(start));
    return lines;
  }

  /** Ends the stream; returns the last line if the input did not end with a newline. */
  end(): Uint8Array | undefined {
    if (this.#rest.length === 0) return undefined;
    const line = concat(this.#rest);
    this.#rest = [];
    return line;
  }
}

/**
 * Splits a byte stream at a delimiter of any length (kcat -D): each piece is its exact bytes
 * without the delimiter; the last piece needs no delimiter, and a final delimiter makes no
 * extra empty piece. Pieces are copies, independent of the input chunks. An unfinished piece
 * is kept whole in memory (use a file per message for large binary values).
 */
export class DelimiterSplitter {
  readonly #delimiter: Uint8Array;
  #rest: Uint8Array = new Uint8Array(0);

  /** @throws RangeError for an empty delimiter */
  constructor(delimiter: Uint8Array) {
    if (delimiter.length === 0) throw new RangeError("delimiter must not be empty");
    this.#delimiter = delimiter;
  }

  /** Feeds a chunk; returns the pieces it completed. */
  push(chunk: Uint8Array): Uint8Array[] {
    const d = this.#delimiter;
    // A delimiter may straddle the previous chunk and this one.
    const searchFrom = Math.max(0, this.#rest.length - d.length + 1);
    const buf = this.#rest.length === 0 ? chunk.slice() : concat([this.#rest, chunk]);
    const pieces: Uint8Array[] = [];
    let start = 0;
    for (let at = indexOfBytes(buf, d, searchFrom); at !== -1; at = indexOfBytes(buf, d, start)) {
      pieces.push(buf.subarray(start, at));
      start = at + d.length;
    }
    this.#rest = buf.subarray(start);
    return pieces;
  }

  /** Ends the stream; returns the last piece if the input did not end with the delimiter. */
  end(): Uint8Array | undefined {
    if (this.#rest.length === 0) return undefined;
    const piece = this.#rest;
    this.#rest = new Uint8Array(0);
    return piece;
  }
}

/**
 * One stdin line as a message: with a separator, the bytes before its first occurrence are the
 * key and the bytes after it the value; a line without it has a null key and is all value
 * (kcat -K). Without a separator: null key, the line is the value.
 */
export function lineToMessage(line: Uint8Array, keySeparator: Uint8Array | undefined): { key: Uint8Array | null; value: Uint8Array } {
  if (keySeparator === undefined) return { key: null, value: line };
  const at = indexOfBytes(line, keySeparator);
  if (at === -1) return { key: null, value: line };
  return { key: line.subarray(0, at), value: line.subarray(at + keySeparator.length) };
}

/** First index of `needle` in `haystack`, or -1 (also for an empty needle). */
export function indexOfBytes(haystack: Uint8Array, needle: Uint8Array, from = 0): number {
  if (needle.length === 0) return -1;
  const first = needle[0]!;
  outer: for (let i = haystack.indexOf(first, from); i !== -1 && i + needle.length <= haystack.length; i = haystack.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** The parts joined into one new array. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Thrown when stdout is closed by the reader (`| head`): a normal end. */
export class OutputClosed extends Error {}

/** stdout with back-pressure and EPIPE handling. */
export class Output {
  readonly #stream: NodeJS.WritableStream;
  #closed = false;

  constructor(stream: NodeJS.WritableStream) {
    this.#stream = stream;
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") this.#closed = true;
    });
  }

  async write(data: string | Uint8Array): Promise<void> {
    if (this.#closed) throw new OutputClosed();
    if (!this.#stream.write(data)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.#stream.off("drain", done);
          this.#stream.off("error", done);
          this.#stream.off("close", done);
          resolve();
        };
        this.#stream.on("drain", done);
        this.#stream.on("error", done);
        this.#stream.on("close", done);
      });
    }
    if (this.#closed) throw new OutputClosed();
  }
}

/**
 * Ctrl-C (SIGINT) or SIGTERM for a command that runs until stopped: `stopped` resolves null on
 * the first of them; `dispose()` removes the listeners (call it in `finally`, so a later signal
 * has Node's default effect again).
 */
export function untilSignal(): { stopped: Promise<null>; dispose(): void } {
  let stop!: () => void;
  const stopped = new Promise<null>((resolve) => (stop = () => resolve(null)));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return {
    stopped,
    dispose() {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
    },
  };
}
