/**
 * Server-Sent Events framing for `?live=sse` (PROTOCOL.md 5.8).
 *
 * Every batch of data is one `event: data` followed by one `event: control`, so a client
 * that collects data up to each control event always holds whole JSON arrays / whole
 * base64 quanta (the conformance suite checks this pairing).
 *
 * Injection safety: a payload is split on every SSE line terminator (CRLF, CR, LF) and each
 * line becomes its own `data:` field, so stream bytes can never end an event or start a new
 * field. No space follows `data:` because clients strip exactly one leading space, and
 * payload lines may begin with one.
 *
 * Pure module: no Workers imports.
 */

import { encodeBase64, fromUtf8 } from "../protocol/encoding.ts";

/** How data events carry bytes: UTF-8 text (`text/*`, JSON) or base64 (everything else). */
export type SseDataEncoding = "text" | "base64";

/** Fields of a control event (PROTOCOL.md 5.8; camelCase as specified). */
export interface SseControl {
  streamNextOffset: string;
  /** Omitted once the stream is closed and fully delivered. */
  streamCursor?: string;
  /** Present (true) when the client has everything the stream holds right now. */
  upToDate?: true;
  /** Present (true) when the stream is closed and everything has been delivered: EOF. */
  streamClosed?: true;
}

const LINE_BREAK = /\r\n|\r|\n/;

function dataLines(payload: string): string {
  let out = "";
  for (const line of payload.split(LINE_BREAK)) out += `data:${line}\n`;
  return out;
}

/**
 * One `event: data` frame.
 * @param body the bytes of this batch (already `[...]`-framed for JSON streams)
 */
export function sseDataEvent(body: Uint8Array, encoding: SseDataEncoding): string {
  const payload = encoding === "base64" ? encodeBase64(body) : fromUtf8(body);
  return `event: data\n${dataLines(payload)}\n`;
}

/** One `event: control` frame. */
export function sseControlEvent(control: SseControl): string {
  return `event: control\n${dataLines(JSON.stringify(control))}\n`;
}
