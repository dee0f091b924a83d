/**
 * The web console's files as the gateway serves them under /ui/ (src/routes/ui.ts). The bodies
 * are built by src/ui/build.ts into assets.generated.ts (committed: see there).
 */
export interface UiAsset {
  /** `Content-Type` of the answer. */
  contentType: string;
  /** Strong ETag, quoted: the first 16 hex digits of the body's SHA-256. */
  etag: string;
  body: string;
}
