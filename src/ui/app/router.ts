/**
 * Routing in the URL fragment (`#/topics/...`): a reload or a shared link never asks the server
 * for an app route, so the Worker serves three files and nothing else (src/routes/ui.ts).
 */
import { useEffect, useState } from "preact/hooks";

export interface Route {
  /** Decoded path segments: `#/topics/a%2Fb/messages` -> ["topics", "a/b", "messages"]. */
  segments: string[];
  query: URLSearchParams;
}

export function currentRoute(): Route {
  const raw = location.hash.replace(/^#\/?/, "");
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const segments = path
    .split("/")
    .filter((s) => s !== "")
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  return { segments, query: new URLSearchParams(q < 0 ? "" : raw.slice(q + 1)) };
}

/** `#/a/b?x=1` for segments ["a", "b"] (each percent-encoded) and a query. */
export function href(segments: string[], query?: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== "") q.set(k, String(v));
  const qs = q.toString();
  return `#/${segments.map(encodeURIComponent).join("/")}${qs === "" ? "" : `?${qs}`}`;
}

export function navigate(to: string): void {
  location.hash = to;
}

/** The current route, re-rendering on `hashchange`. */
export function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const on = () => setRoute(currentRoute());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}
