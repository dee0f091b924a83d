/**
 * The JSON of delivered messages, serialised once per record and encoding and shared by every
 * subscription of the partition (bench/subscriptions.ts fan-out, docs/benchmarks.md
 * "Subscriptions").
 *
 * Why: an append to a partition with N subscriptions delivers each record N times; building
 * and serialising a {@link WireMessage} per delivery decoded the same key, value and headers
 * and ran `JSON.stringify` over them N times. Here a record's message JSON is built once, cut
 * before its `redeliveryCount` (the only field that differs between deliveries of one record
 * in one encoding), and a `messages` frame is concatenated from those parts. The bytes sent are
 * exactly what `JSON.stringify({ type: "messages", messages })` gave (property-tested in
 * test/unit/subscriptions-message-json.test.ts): the wire protocol does not change.
 *
 * Pure: no I/O. The cache holds its strings in weak maps keyed by the decoded record objects of
 * the room's record cache (src/subscriptions/record-cache.ts), so it is bounded by that cache
 * (a batch it evicts takes its strings with it) and never answers for a record object that was
 * replaced (compaction rewrites and resets clear the record cache, and this one with it).
 */
import type { LogRecord } from "../codec/types.ts";
import { decodeField, utf8ByteLength } from "../protocol/encoding.ts";
import { formatMessageId } from "./message-id.ts";
import type { WireMessage } from "./wire.ts";

/** How keys, values and header values are written in `messages` frames. */
export type WireEncoding = "string" | "base64";

/** The end of a message's JSON whose count is cut off: the count and the closing brace follow. */
const COUNT_FIELD = '"redeliveryCount":';
/** The text around a `messages` frame's messages (as `JSON.stringify` writes the frame). */
const FRAME_OPEN = '{"type":"messages","messages":[';
const FRAME_CLOSE = "]}";

/** The {@link WireMessage} of record `r` of `partition`, delivered with `redeliveryCount`. */
export function wireMessage(partition: number, r: LogRecord, redeliveryCount: number, encoding: WireEncoding): WireMessage {
  return {
    messageId: formatMessageId(partition, r.offset),
    partition,
    offset: r.offset,
    timestamp: r.timestamp,
    key: decodeField(r.key, encoding, "key") as string | null,
    value: decodeField(r.value, encoding, "value") as string | null,
    headers: r.headers.map((h) => ({ key: h.key, value: decodeField(h.value, encoding, "header") as string | null })),
    redeliveryCount,
  };
}

/**
 * The JSON of a record's message up to and including `"redeliveryCount":` (the count and `}`
 * are appended by {@link messageJson}). `redeliveryCount` is the last field of a
 * {@link WireMessage}, so the head is the same for every delivery of the record.
 */
export function messageJsonHead(partition: number, r: LogRecord, encoding: WireEncoding): string {
  const full = JSON.stringify(wireMessage(partition, r, 0, encoding));
  const tail = `${COUNT_FIELD}0}`;
  // Asserted, not assumed: a field added after redeliveryCount would make every frame wrong.
  if (!full.endsWith(tail)) throw new Error("wire message JSON does not end with its redeliveryCount");
  return full.slice(0, full.length - 2);
}

/** A whole message's JSON from its head and the delivery's redelivery count (a non-negative integer). */
export function messageJson(head: string, redeliveryCount: number): string {
  return `${head}${redeliveryCount}}`;
}

/**
 * Joins message JSON strings into `messages` frames of at most `maxFrameBytes` bytes of UTF-8
 * each (a single larger message goes alone in its frame), in order. Each frame is the text
 * `JSON.stringify({ type: "messages", messages })` gives for the same messages. Sizes are UTF-8
 * bytes, as the socket sends them (a frame of multi-byte text is up to 3 times its length).
 * @param maxFrameBytes frame size limit, bytes (>= 1).
 */
export function messagesFrames(messages: readonly string[], maxFrameBytes: number): string[] {
  const frames: string[] = [];
  let parts: string[] = [];
  const empty = FRAME_OPEN.length + FRAME_CLOSE.length;
  // Fast path: a code unit is at most 3 bytes, so a list whose code units fit a third of the
  // limit is one frame without counting its bytes (the usual dispatch of a few messages).
  let units = empty + Math.max(0, messages.length - 1);
  for (const m of messages) units += m.length;
  if (messages.length > 0 && units * 3 <= maxFrameBytes) return [FRAME_OPEN + messages.join(",") + FRAME_CLOSE];
  let bytes = empty;
  for (const m of messages) {
    const size = utf8ByteLength(m);
    // A message after the first costs its comma too.
    if (parts.length > 0 && bytes + 1 + size > maxFrameBytes) {
      frames.push(FRAME_OPEN + parts.join(",") + FRAME_CLOSE);
      parts = [];
      bytes = empty;
    }
    bytes += size + (parts.length > 0 ? 1 : 0);
    parts.push(m);
  }
  if (parts.length > 0) frames.push(FRAME_OPEN + parts.join(",") + FRAME_CLOSE);
  return frames;
}

/** A record's cached JSON: the head, and the whole JSON of its first delivery (count 0). */
interface Heads {
  readonly head: string;
  readonly first: string;
}

/**
 * Message JSON heads per decoded record and encoding, for one partition. Bounded by the record
 * objects it is keyed by (weak maps); {@link clear} drops everything at once.
 */
export class MessageJsonCache {
  #string = new WeakMap<LogRecord, Heads>();
  #base64 = new WeakMap<LogRecord, Heads>();
  #partition: number | null = null;

  #heads(partition: number, r: LogRecord, encoding: WireEncoding): Heads {
    // One partition per cache; a different one (never in a partition object) starts afresh.
    if (partition !== this.#partition) {
      this.clear();
      this.#partition = partition;
    }
    const map = encoding === "base64" ? this.#base64 : this.#string;
    let h = map.get(r);
    if (h === undefined) {
      const head = messageJsonHead(partition, r, encoding);
      h = { head, first: messageJson(head, 0) };
      map.set(r, h);
    }
    return h;
  }

  /** The head of `r`'s message JSON in `encoding`: cached, else built ({@link messageJsonHead}) and cached. */
  head(partition: number, r: LogRecord, encoding: WireEncoding): string {
    return this.#heads(partition, r, encoding).head;
  }

  /**
   * The whole message JSON of one delivery of `r`. A first delivery (count 0, the common case)
   * returns the same cached string object to every subscription, which {@link FrameMemo}
   * compares by identity.
   */
  json(partition: number, r: LogRecord, redeliveryCount: number, encoding: WireEncoding): string {
    const h = this.#heads(partition, r, encoding);
    return redeliveryCount === 0 ? h.first : messageJson(h.head, redeliveryCount);
  }

  clear(): void {
    this.#string = new WeakMap();
    this.#base64 = new WeakMap();
    this.#partition = null;
  }
}

/**
 * The frames of the last message list it was given, for the next subscription that delivers
 * the same messages: in a fan-out every subscription's frame of one append is the same text, so
 * it is joined once and the same string is sent to every socket (as a broadcast would). Holds
 * one list (bounded); a list is the same when it has the same length and every element is the
 * same string (`===`: pointer-fast for the cached strings of {@link MessageJsonCache}).
 */
export class FrameMemo {
  #messages: readonly string[] = [];
  #maxFrameBytes = 0;
  #frames: string[] = [];

  /** `messagesFrames(messages, maxFrameBytes)`, from the memo when the list is the last one's. */
  frames(messages: readonly string[], maxFrameBytes: number): string[] {
    if (maxFrameBytes !== this.#maxFrameBytes || !sameList(messages, this.#messages)) {
      this.#frames = messagesFrames(messages, maxFrameBytes);
      this.#messages = messages;
      this.#maxFrameBytes = maxFrameBytes;
    }
    return this.#frames;
  }

  clear(): void {
    this.#messages = [];
    this.#frames = [];
    this.#maxFrameBytes = 0;
  }
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
