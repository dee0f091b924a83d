/**
 * Idempotent create (PROTOCOL.md 5.1 and 4.2 "Idempotent fork creation"): a PUT on an
 * existing stream is 200 when it asks for the same configuration, 409 otherwise.
 *
 * Pure module: no Workers imports.
 */

import { contentTypesMatch, DEFAULT_CONTENT_TYPE, type ExpiryConfig } from "./headers.ts";
import { expiryEquals } from "./expiry.ts";

/** The part of a stream's configuration a PUT is compared against. */
export interface StreamConfig extends ExpiryConfig {
  contentType: string;
  closed: boolean;
  /** True when the expiry was inherited from a fork source, not requested. */
  expiryInherited: boolean;
  /** Path of the source stream, null when not a fork. */
  forkSource: string | null;
  /** Edgelog offset of the requested anchor (Stream-Fork-Offset, or the source tail when omitted). */
  forkAnchor: number | null;
  /** Stream-Fork-Sub-Offset as requested (0 when absent). */
  forkSubOffset: number;
}

/** A PUT's configuration, as parsed (before defaults and inheritance). */
export interface CreateConfig extends ExpiryConfig {
  contentType: string | null;
  closed: boolean;
  fork: { source: string; anchor: number | null; subOffset: number } | null;
}

/**
 * True when `req` asks for the configuration `existing` has: same content type (by
 * essence; an omitted one means the default, or the source's for a fork), same expiry (an
 * inherited expiry matches a request that names none), same closure status, same fork
 * source, anchor (when the request names one) and sub-offset.
 */
export function createMatches(existing: StreamConfig, req: CreateConfig): boolean {
  const wantType = req.contentType ?? (req.fork !== null ? existing.contentType : DEFAULT_CONTENT_TYPE);
  if (!contentTypesMatch(wantType, existing.contentType)) return false;
  const noExpiryRequested = req.ttlSeconds === null && req.expiresAtMs === null;
  if (!(existing.expiryInherited && noExpiryRequested) && !expiryEquals(existing, req)) return false;
  if (existing.closed !== req.closed) return false;
  if ((req.fork?.source ?? null) !== existing.forkSource) return false;
  if (req.fork !== null) {
    if (req.fork.anchor !== null && req.fork.anchor !== existing.forkAnchor) return false;
    if (req.fork.subOffset !== existing.forkSubOffset) return false;
  }
  return true;
}
