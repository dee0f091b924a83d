import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { API_INDEX } from "../../src/protocol/index-doc.ts";

describe("GET / and JSON answers", () => {
  it("answers a small JSON index of the API instead of an error", async () => {
    const res = await SELF.fetch("http://edgelog.test/");
    expect([res.status, res.headers.get("content-type")]).toEqual([200, "application/json"]);
    const text = await res.text();
    expect(text.endsWith("}\n")).toBe(true);
    expect(JSON.parse(text)).toEqual(API_INDEX);
  });

  it("every route of the index is served (no 404 NOT_FOUND for its method and path)", async () => {
    const missing: string[] = [];
    for (const r of API_INDEX.routes) {
      const path = r.path.replace("{topic}", "no-such-topic").replace("{partition}", "0").replace("{group}", "no-such-group").replace("{path}", "no-such-stream");
      for (const method of r.methods) {
        const res = await SELF.fetch(`http://edgelog.test${path}`, {
          method,
          ...(method === "GET" || method === "HEAD" ? {} : { headers: { "content-type": "application/json" }, body: "{}" }),
        });
        const code = method === "HEAD" || res.status !== 404 ? null : ((await res.json()) as { error: { code: string } }).error.code;
        if (code === "NOT_FOUND" || res.status === 405) missing.push(`${method} ${r.path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("JSON answers of /v1 end with a newline (answers and errors alike; Durable Streams bodies are checked byte for byte in durable-streams.test.ts)", async () => {
    expect(await (await SELF.fetch("http://edgelog.test/v1/health")).text()).toBe('{"ok":true}\n');
    const notFound = await SELF.fetch("http://edgelog.test/v1/nope");
    expect((await notFound.text()).endsWith("}\n")).toBe(true);
    const bad = await SELF.fetch("http://edgelog.test/v1/topics", { method: "POST", headers: { "content-type": "application/json" }, body: "{" });
    expect([bad.status, (await bad.text()).endsWith("}\n")]).toEqual([400, true]);
  });
});
