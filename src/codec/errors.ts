/**
 * The one error the codec throws for bytes it cannot accept (pure module, shared with the SDK).
 *
 * A `CodecError` always means "these bytes are not a valid Edgelog record batch" (truncated,
 * bad magic, checksum mismatch, a field out of range); the gateway maps it to INVALID_BATCH.
 * It is also thrown when asked to *encode* a value the format cannot represent (e.g. an i64
 * field beyond Number.MAX_SAFE_INTEGER), so no silent truncation happens on either side.
 */
export class CodecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CodecError";
  }
}
