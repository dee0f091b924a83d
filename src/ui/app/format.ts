/** How the console shows bytes, sizes, rates and times. Pure functions. */

/** How a key, value or header value is shown: `auto` picks JSON, then text, then hex. */
export type ValueFormat = "auto" | "text" | "json" | "hex";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Decodes the API's base64 (RFC 4648, as `encoding=base64` answers) to bytes. */
export function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** `de ad be ef` (lower-case pairs separated by spaces). */
export function hex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += (i === 0 ? "" : " ") + bytes[i]!.toString(16).padStart(2, "0");
  return s;
}

/** A shown value: the text and the format it ended up in (`null` for a null key or value). */
export interface Shown {
  text: string;
  as: "null" | "text" | "json" | "hex";
}

/**
 * Shows bytes (base64 from the API, or null) in `format`. `json` pretty-prints with 2 spaces
 * and falls back to text or hex when the bytes are not JSON; `text` falls back to hex when
 * they are not UTF-8; `auto` tries JSON (objects and arrays only, so that `42` stays text),
 * then text, then hex.
 */
export function showValue(b64: string | null, format: ValueFormat): Shown {
  if (b64 === null) return { text: "null", as: "null" };
  const bytes = base64ToBytes(b64);
  if (format === "hex") return { text: hex(bytes), as: "hex" };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { text: hex(bytes), as: "hex" };
  }
  if (format === "json" || (format === "auto" && /^\s*[[{]/.test(text))) {
    try {
      return { text: JSON.stringify(JSON.parse(text), null, 2), as: "json" };
    } catch {
      // not JSON: as text
    }
  }
  return { text, as: "text" };
}

/** `1.5 KiB`, `3 B`: binary units, one decimal. */
export function bytesText(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u]}`;
}

/** A per-second rate with up to 1 decimal, or `–` when not known yet. */
export function rateText(perSecond: number | undefined, unit: string): string {
  if (perSecond === undefined || !Number.isFinite(perSecond)) return "–";
  const v = perSecond >= 100 ? Math.round(perSecond).toString() : perSecond.toFixed(1);
  return `${v} ${unit}/s`;
}

/** A timestamp (ms since the epoch) as ISO-8601 UTC with milliseconds. */
export function timeText(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  return new Date(ms).toISOString();
}

/** A number with thousands separators, `–` for null/undefined. */
export function num(n: number | null | undefined): string {
  return n === null || n === undefined ? "–" : n.toLocaleString("en-US");
}
