/**
 * The web console (/ui/, docs/OBSERVABILITY.md "Web console") in real headless Chromium
 * (Debian's `chromium`, installed by .ci/setup-browsers; driven by playwright-core) against a
 * real `wrangler dev` with authentication on: the console's API calls carry the token pasted in
 * the page. A screenshot of each page goes to test/e2e/output/console/ (gitignored).
 *
 * Skipped, saying so, only when no Chromium is installed (CI installs it).
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { SignJWT } from "jose";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, ROOT, randomTopic, startDevServer } from "./dev-server.ts";

const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
if (CHROMIUM === undefined) console.warn("console.test.ts skipped: no Debian chromium; `bash .ci/setup-browsers` installs it");

const OUTPUT = join(ROOT, "test/e2e/output/console");
const SECRET = `console-test-${Math.random().toString(36).slice(2)}`;
/** Generous waits: the machine is shared; nothing here is a timing assertion. */
const WAIT = { timeout: 30_000 };

async function token(sub: string): Promise<string> {
  return await new SignJWT({}).setProtectedHeader({ alg: "HS256" }).setSubject(sub).setExpirationTime("1h").sign(new TextEncoder().encode(SECRET));
}

describe.skipIf(CHROMIUM === undefined)("the web console in headless Chromium", () => {
  let server: DevServer;
  let browser: Browser;
  let page: Page;
  let admin: string;
  let viewer: string;
  const topic = randomTopic("ui");
  const full = `public/default/${topic}`;
  const subTopic = randomTopic("ui-sub");
  const subFull = `public/default/${subTopic}`;

  /** An API call as the admin (the test's own setup and checks). */
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> => {
    const res = await fetch(`${server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${admin}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text === "" ? null : (JSON.parse(text) as unknown) };
  };
  const shot = async (p: Page, name: string) => {
    await p.screenshot({ path: join(OUTPUT, `${name}.png`), fullPage: true });
  };
  const open = async (hash: string) => {
    await page.goto(`${server.baseUrl}/ui/${hash}`);
  };

  beforeAll(async () => {
    mkdirSync(OUTPUT, { recursive: true });
    admin = await token("admin");
    viewer = await token("viewer");
    const { chromium } = await import("playwright-core");
    [server, browser] = await Promise.all([
      startDevServer({ vars: { EDGELOG_AUTH: "required", EDGELOG_JWT_SECRET: SECRET, EDGELOG_SUPERUSERS: "admin" } }),
      chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--headless=new"] }),
    ]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: "UTC" });
    page = await context.newPage();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.dispose();
  });

  it("serves the page, its script and style without a token, with ETags and a CSP", async () => {
    const redirect = await fetch(`${server.baseUrl}/ui`, { redirect: "manual" });
    expect([redirect.status, redirect.headers.get("location")]).toEqual([301, "/ui/"]);
    const html = await fetch(`${server.baseUrl}/ui/`);
    expect(html.status).toBe(200);
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(await html.text()).toContain('<script type="module" src="app.js"></script>');
    const js = await fetch(`${server.baseUrl}/ui/app.js`);
    expect([js.status, js.headers.get("content-type")]).toEqual([200, "text/javascript; charset=utf-8"]);
    const etag = js.headers.get("etag")!;
    await js.arrayBuffer();
    const again = await fetch(`${server.baseUrl}/ui/app.js`, { headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    const missing = await fetch(`${server.baseUrl}/ui/nope.js`);
    expect([missing.status, ((await missing.json()) as { error: { code: string } }).error.code]).toEqual([404, "NOT_FOUND"]);
  });

  it("shows the API's error codes: 401 without a token, 403 for a principal without ACLs", async () => {
    await open("#/topics");
    await page.getByRole("alert").filter({ hasText: "Listing topics" }).getByText("UNAUTHENTICATED").waitFor(WAIT);
    expect(await page.getByRole("alert").filter({ hasText: "Listing topics" }).textContent()).toContain("401 UNAUTHENTICATED");

    await page.getByText("No token").click();
    await page.getByLabel("Bearer token").fill(viewer);
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByText("Signed in as viewer.").waitFor(WAIT);
    // The metrics need cluster DESCRIBE: a 403 with its code, shown where the sizes would be.
    await page.getByRole("alert").filter({ hasText: "GET /v1/metrics" }).getByText("NOT_AUTHORIZED").waitFor(WAIT);
    await page.getByLabel("Name", { exact: true }).fill(topic);
    await page.getByRole("button", { name: "Create topic" }).click();
    const refused = page.getByRole("alert").filter({ hasText: "Create topic" });
    await refused.getByText("NOT_AUTHORIZED").waitFor(WAIT);
    expect(await refused.textContent()).toContain("403 NOT_AUTHORIZED");
    await shot(page, "error-403");
    // Nothing was created.
    expect((await call("GET", `/v1/topics/${topic}`)).status).toBe(404);
  });

  it("creates a topic, produces a message, browses it back (JSON, hex, by timestamp) and tails live", async () => {
    await page.getByText(/^Token set/).click();
    await page.getByLabel("Bearer token").fill(admin);
    await page.getByRole("button", { name: "Use token" }).click();
    await page.getByText("Signed in as admin (superuser).").waitFor(WAIT);

    await page.getByLabel("Name", { exact: true }).fill(topic);
    await page.getByLabel("Partitions", { exact: true }).fill("2");
    await page.getByRole("button", { name: "Create topic" }).click();
    await page.getByRole("heading", { level: 1, name: `Topic ${full}` }).waitFor(WAIT);
    const described = (await call("GET", `/v1/topics/${topic}`)).json as { partitions: number };
    expect(described.partitions).toBe(2);

    // An error from the API with its code: the same name again.
    await open("#/topics");
    await page.getByRole("link", { name: full }).waitFor(WAIT);
    await page.getByLabel("Name", { exact: true }).fill(topic);
    await page.getByRole("button", { name: "Create topic" }).click();
    await page.getByRole("alert").filter({ hasText: "Create topic" }).getByText("TOPIC_ALREADY_EXISTS").waitFor(WAIT);
    await shot(page, "topics");

    await open(`#/topics/${encodeURIComponent(full)}/messages`);
    await page.getByRole("heading", { level: 1, name: `Messages of ${full}` }).waitFor(WAIT);
    await page.getByLabel("Key (empty for null)").fill("k1");
    await page.getByLabel(/^Value/).fill('{"hello":"console","n":1}');
    await page.getByLabel(/^Headers/).fill("trace=abc");
    await page.getByRole("button", { name: "Produce", exact: true }).click();
    await page.getByText("Produced to partition 0 at offset 0.").waitFor(WAIT);

    // What the UI produced is exactly what the API stores.
    const fetched = (await call("GET", `/v1/topics/${topic}/partitions/0/records?offset=0`)).json as { records: { key: string; value: string; headers: unknown }[] };
    expect(fetched.records.map((r) => [r.key, r.value, r.headers])).toEqual([["k1", '{"hello":"console","n":1}', [{ key: "trace", value: "abc" }]]]);

    await page.getByRole("button", { name: "Browse", exact: true }).click();
    const row = page.locator("table.records tbody tr").first();
    await row.waitFor(WAIT);
    expect(await row.locator("td[data-label=Value] pre").textContent()).toBe('{\n  "hello": "console",\n  "n": 1\n}');
    expect(await row.locator("td[data-label=Headers]").textContent()).toBe("trace: abc");
    await page.getByLabel("Show values as").selectOption("hex");
    expect(await row.locator("td[data-label=Value] pre").textContent()).toBe(
      [...new TextEncoder().encode('{"hello":"console","n":1}')].map((b) => b.toString(16).padStart(2, "0")).join(" "),
    );
    await page.getByLabel("Show values as").selectOption("auto");
    await shot(page, "messages");

    // By timestamp, on partition 1: records at 2001, 2017 and 2023; from 2020-01-01 (UTC) the first shown is offset 2.
    const stamps = [1_000_000_000_000, 1_500_000_000_000, 1_700_000_000_000];
    const produced = await call("POST", `/v1/topics/${topic}/partitions/1/records`, { records: stamps.map((timestamp, i) => ({ value: `v${i}`, timestamp })) });
    expect(produced.status).toBe(200);
    await page
      .getByRole("combobox", { name: /^Partition/ })
      .first()
      .selectOption("1");
    await page.getByRole("row").filter({ hasText: "v0" }).waitFor(WAIT);
    await page.getByLabel("Start from").selectOption("timestamp");
    await page.getByLabel("Time (your local time)").fill("2020-01-01T00:00:00");
    await page.getByRole("button", { name: "Browse", exact: true }).click();
    await page.getByText("1 record from offset 2.").waitFor(WAIT);
    expect(await page.locator("table.records tbody th").allTextContents()).toEqual(["2"]);
    expect(await page.locator("table.records tbody td[data-label=Timestamp]").allTextContents()).toEqual([new Date(1_700_000_000_000).toISOString()]);

    // Live tail over long-poll: a record produced elsewhere appears without a click.
    await page.getByRole("button", { name: "Live tail" }).click();
    await page.getByText("Tailing: new records appear").waitFor(WAIT);
    expect((await call("POST", `/v1/topics/${topic}/partitions/1/records`, { records: [{ key: "tailed", value: "live!" }] })).status).toBe(200);
    await page.getByRole("row").filter({ hasText: "tailed" }).waitFor(WAIT);
    expect(await page.getByRole("row").filter({ hasText: "tailed" }).locator("td[data-label=Value] pre").textContent()).toBe("live!");
    await page.getByRole("button", { name: "Stop live tail" }).click();
  });

  it("alters a config and deletes a topic after typed confirmation", async () => {
    const doomed = randomTopic("ui-del");
    expect((await call("POST", "/v1/topics", { name: doomed })).status).toBe(201);
    await open(`#/topics/${encodeURIComponent(`public/default/${doomed}`)}`);
    await page.getByRole("heading", { name: "Partitions" }).waitFor(WAIT);
    // "Edit" puts the config's current value in the changes field.
    await page.getByRole("button", { name: "Edit retention.ms" }).click();
    expect(await page.getByLabel(/^Config changes/).inputValue()).toBe("retention.ms=604800000");
    await page.getByLabel(/^Config changes/).fill("retention.ms=3600000");
    await page.getByRole("button", { name: "Apply changes" }).click();
    await page.getByText("Saved.").waitFor(WAIT);
    expect(((await call("GET", `/v1/topics/${doomed}`)).json as { configs: Record<string, unknown> }).configs["retention.ms"]).toBe(3600000);
    // A bad value: the API's INVALID_CONFIG, shown.
    await page.getByLabel(/^Config changes/).fill("retention.ms=soon");
    await page.getByRole("button", { name: "Apply changes" }).click();
    await page.getByRole("alert").filter({ hasText: "Alter topic" }).getByText("INVALID_CONFIG").waitFor(WAIT);
    await shot(page, "topic");

    await page.getByRole("button", { name: "Delete topic…" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.waitFor(WAIT);
    expect(await dialog.getByRole("button", { name: "Delete" }).isDisabled()).toBe(true);
    await dialog.getByLabel(/^Type/).fill(`public/default/${doomed}`);
    // Keyboard: Enter in the confirmation field submits it.
    await dialog.getByLabel(/^Type/).press("Enter");
    await page.getByRole("heading", { level: 1, name: "Topics" }).waitFor(WAIT);
    expect((await call("GET", `/v1/topics/${doomed}`)).status).toBe(404);
  });

  it("shows a group's lag, which drops to 0 once the group has consumed, and refuses a reset while it has members", async () => {
    const group = randomTopic("ui-group");
    const records = Array.from({ length: 5 }, (_, i) => ({ value: `r${i}` }));
    expect((await call("POST", `/v1/topics/${topic}/partitions/0/records`, { records })).status).toBe(200);
    // Partition 0 now ends at 6 (the UI's record + 5); the group committed 1.
    expect((await call("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: 1 }] })).status).toBe(200);

    await open(`#/groups/${group}`);
    const total = page.getByTestId("total-lag");
    await total.waitFor(WAIT);
    expect(await total.textContent()).toBe("5");
    await shot(page, "group");

    // Consume the 5 records over HTTP and commit where the fetch ended.
    const read = (await call("GET", `/v1/topics/${topic}/partitions/0/records?offset=1`)).json as { records: unknown[]; nextOffset: number };
    expect([read.records.length, read.nextOffset]).toEqual([5, 6]);
    expect((await call("POST", `/v1/groups/${group}/offsets`, { offsets: [{ topic, partition: 0, offset: read.nextOffset }] })).status).toBe(200);
    // The page samples the group every 2 s: the lag drops to 0 without a reload.
    await expect.poll(() => total.textContent(), WAIT).toBe("0");
    expect(await page.getByTestId(`lag-${full}[0]`).textContent()).toBe("0");
    // The lag chart has sampled both values.
    expect(await page.locator("figure.chart svg").getAttribute("aria-label")).toMatch(/^Lag of .*Latest: total: 0 records/);

    // A member joins: reset offsets is refused with the API's code.
    const joined = await call("POST", `/v1/groups/${group}/heartbeat`, { memberEpoch: 0, subscribedTopicNames: [topic], clientId: "console-test" });
    expect(joined.status).toBe(200);
    await page.getByText("console-test").waitFor(WAIT);
    await page.getByLabel("Dry run").uncheck();
    await page.getByRole("button", { name: "Reset offsets" }).click();
    const refused = page.getByRole("alert").filter({ hasText: "Reset offsets" });
    await refused.getByText("NON_EMPTY_GROUP").waitFor(WAIT);
    expect(await refused.textContent()).toContain("409 NON_EMPTY_GROUP");
    await shot(page, "group-non-empty");
    const member = (joined.json as { memberId: string; memberEpoch: number }).memberId;
    expect((await call("POST", `/v1/groups/${group}/leave`, { memberId: member, memberEpoch: (joined.json as { memberEpoch: number }).memberEpoch })).status).toBe(200);

    await open("#/groups");
    await page.getByRole("link", { name: group }).waitFor(WAIT);
    await shot(page, "groups");
  });

  it("shows a subscription's backlog, skips and clears it from the page, and offers force when delete is refused", async () => {
    expect((await call("POST", "/v1/topics", { name: subTopic })).status).toBe(201);
    expect((await call("PUT", `/v1/topics/${subTopic}/subscriptions/orders-sub`, { type: "shared", initialPosition: "earliest" })).status).toBe(201);
    const records = Array.from({ length: 5 }, (_, i) => ({ value: `m${i}` }));
    expect((await call("POST", `/v1/topics/${subTopic}/partitions/0/records`, { records })).status).toBe(200);

    await open(`#/topics/${encodeURIComponent(subFull)}`);
    const backlog = page.getByTestId("backlog-orders-sub");
    await backlog.waitFor(WAIT);
    await expect.poll(() => backlog.textContent(), WAIT).toBe("5");

    await page.getByRole("button", { name: "Manage subscription orders-sub" }).click();
    await page.getByRole("heading", { name: "Subscription orders-sub" }).waitFor(WAIT);
    await page.getByLabel("Messages to skip").fill("2");
    await page.getByLabel("Messages to skip").press("Enter");
    await page.getByText("Skipped 2 messages.").waitFor(WAIT);
    await expect.poll(() => backlog.textContent(), WAIT).toBe("3");
    expect(((await call("GET", `/v1/topics/${subTopic}/subscriptions/orders-sub`)).json as { backlog: number }).backlog).toBe(3);

    // An HTTP pull lease holds one message: a consumer of the subscription, one unacked.
    const leased = await call("POST", `/v1/topics/${subTopic}/partitions/0/subscriptions/orders-sub/receive`, { maxMessages: 1, visibilityTimeoutMs: 600_000 });
    expect((leased.json as { messages: { value: string }[] }).messages.map((m) => m.value)).toEqual(["m2"]);
    await expect.poll(() => page.getByTestId("unacked-orders-sub").textContent(), WAIT).toBe("1");
    expect(await backlog.textContent()).toBe("3");

    // Delete is refused while it has a consumer: the API's code is shown, force is offered.
    await page.getByRole("button", { name: "Delete subscription…" }).click();
    let dialog = page.getByRole("dialog");
    await dialog.getByLabel(/^Type/).fill("orders-sub");
    await dialog.getByRole("button", { name: "Delete", exact: true }).click();
    const refused = page.getByRole("alert").filter({ hasText: "Delete subscription" });
    await refused.getByText("SUBSCRIPTION_HAS_CONSUMERS").waitFor(WAIT);
    expect(await refused.textContent()).toContain("409 SUBSCRIPTION_HAS_CONSUMERS");
    expect((await call("GET", `/v1/topics/${subTopic}/subscriptions/orders-sub`)).status).toBe(200);

    // Clear backlog, after typed confirmation: the backlog drops to 0.
    await page.getByRole("button", { name: "Clear backlog…" }).click();
    dialog = page.getByRole("dialog");
    expect(await dialog.getByRole("button", { name: "Clear backlog" }).isDisabled()).toBe(true);
    await dialog.getByLabel(/^Type/).fill("orders-sub");
    await dialog.getByLabel(/^Type/).press("Enter");
    await page.getByText("Cleared 3 messages.").waitFor(WAIT);
    await expect.poll(() => backlog.textContent(), WAIT).toBe("0");
    expect(((await call("GET", `/v1/topics/${subTopic}/subscriptions/orders-sub`)).json as { backlog: number }).backlog).toBe(0);
    await shot(page, "subscriptions");

    // Reset the cursor to the earliest message: every record is backlog again.
    await page.getByLabel("Reset to").selectOption("earliest");
    await page.getByRole("button", { name: "Reset cursor" }).click();
    await page.getByText("Cursor reset to earliest.").waitFor(WAIT);
    await expect.poll(() => backlog.textContent(), WAIT).toBe("5");

    await page.getByRole("button", { name: "Force delete…" }).click();
    dialog = page.getByRole("dialog");
    await dialog.getByLabel(/^Type/).fill("orders-sub");
    await dialog.getByRole("button", { name: "Force delete" }).click();
    await page.getByText("No subscriptions.").waitFor(WAIT);
    const gone = await call("GET", `/v1/topics/${subTopic}/subscriptions/orders-sub`);
    expect([gone.status, (gone.json as { error: { code: string } }).error.code]).toEqual([404, "SUBSCRIPTION_NOT_FOUND"]);

    // Create one from the page, at the earliest message: it opens with its backlog.
    await page.getByLabel("Subscription name").fill("from-ui");
    await page.getByLabel("Subscription type").selectOption("failover");
    await page.getByLabel("Initial position").selectOption("earliest");
    await page.getByRole("button", { name: "Create subscription" }).click();
    await page.getByRole("heading", { name: "Subscription from-ui" }).waitFor(WAIT);
    await expect.poll(() => page.getByTestId("backlog-from-ui").textContent(), WAIT).toBe("5");
    const made = (await call("GET", `/v1/topics/${subTopic}/subscriptions/from-ui`)).json as { type: string; backlog: number };
    expect([made.type, made.backlog]).toEqual(["failover", 5]);
  });

  it("lists Durable Streams and tails one", async () => {
    const path = `console/${randomTopic("s")}`;
    const created = await fetch(`${server.baseUrl}/v1/stream/${path}`, { method: "PUT", headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" } });
    expect(created.status).toBe(201);
    await open("#/streams");
    await page.getByRole("link", { name: path }).click();
    await page.getByRole("heading", { level: 1, name: `Stream ${path}` }).waitFor(WAIT);
    // The tail starts at "now": append only after its first read has fixed that position, or
    // a fast append lands before it and is (rightly) not shown.
    const firstRead = page.waitForResponse((r) => r.url().includes(path.split("/").pop()!) && r.url().includes("offset=now"), WAIT);
    await page.getByRole("button", { name: "Tail" }).click();
    await page.getByText("Tailing over long-poll.").waitFor(WAIT);
    await firstRead;
    const appended = await fetch(`${server.baseUrl}/v1/stream/${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
      body: JSON.stringify({ event: "hello" }),
    });
    expect(appended.status).toBeLessThan(300);
    await page.locator("ol.chunks pre").filter({ hasText: '{"event":"hello"}' }).waitFor(WAIT);
    await shot(page, "stream");
    await page.getByRole("button", { name: "Stop tail" }).click();
    await open("#/streams");
    await page.getByRole("link", { name: path }).waitFor(WAIT);
    await shot(page, "streams");
  });

  it("charts rates and lag from the metrics", async () => {
    await open("#/");
    // Two scrapes make a rate; the charts' labels carry the latest values.
    await expect.poll(() => page.locator("figure.chart svg").count(), WAIT).toBe(4);
    const labels = await page.locator("figure.chart svg").evaluateAll((els) => els.map((e) => e.getAttribute("aria-label") ?? ""));
    expect(labels.map((l) => l.split(".")[0])).toEqual(["Records in per second, by topic", "Records out per second, by topic", "Bytes in per second, by topic", "Consumer lag, by group"]);
    await shot(page, "overview");
  });

  it("signs in as a SCRAM user (the password exchanged for a token), showing a wrong password's 401", async () => {
    const user = `ui-user-${Math.random().toString(36).slice(2, 8)}`;
    expect((await call("PUT", `/v1/users/${user}`, { password: "right-password-1" })).status).toBe(200);
    await open("#/topics");
    await page.getByText(/^Token set/).click();
    await page.getByLabel("User", { exact: true }).fill(user);
    await page.getByLabel("Password", { exact: true }).fill("wrong-password");
    await page.getByRole("button", { name: "Sign in" }).click();
    const refused = page.getByRole("alert").filter({ hasText: "Token:" });
    await refused.getByText("UNAUTHENTICATED").waitFor(WAIT);
    expect(await refused.textContent()).toContain("401 UNAUTHENTICATED");
    await page.getByLabel("Password", { exact: true }).fill("right-password-1");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByText(`Token set: ${user}`).waitFor(WAIT);
    // The password is not kept anywhere in the page; the token is, in this tab's sessionStorage.
    expect(await page.evaluate<string>("JSON.stringify(sessionStorage)")).not.toContain("right-password-1");
    expect(await page.evaluate<string | null>('sessionStorage.getItem("edgelog.console.token")')).toMatch(/^ey/);
  });

  it("fits a phone screen (375 px) without sideways scrolling", async () => {
    const phone = await browser.newPage({ viewport: { width: 375, height: 812 }, timezoneId: "UTC" });
    try {
      await phone.addInitScript((t) => sessionStorage.setItem("edgelog.console.token", t), admin);
      for (const [hash, name] of [
        [`#/topics/${encodeURIComponent(full)}/messages`, "phone-messages"],
        ["#/topics", "phone-topics"],
        [`#/topics/${encodeURIComponent(full)}`, "phone-topic"],
        [`#/topics/${encodeURIComponent(subFull)}`, "phone-subscription"],
      ] as const) {
        await phone.goto(`${server.baseUrl}/ui/${hash}`);
        await phone.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Topics" }).waitFor(WAIT);
        // The subscription test's topic, with its one subscription's panel open.
        if (name === "phone-subscription") await phone.getByRole("button", { name: "Manage subscription from-ui" }).click();
        await phone.waitForLoadState("networkidle").catch(() => undefined);
        await phone.locator("table").first().waitFor(WAIT);
        const width = await phone.evaluate<number>("document.documentElement.scrollWidth");
        // On failure, the elements that stick out (tag.class), to say what to fix.
        const wide = await phone.evaluate<string[]>(
          "[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5 && !e.closest('.table-wrap')).map((e) => e.tagName.toLowerCase() + '.' + e.className)",
        );
        expect({ name, width, wide }).toEqual({ name, width: 375, wide: [] });
        await shot(phone, name);
      }
    } finally {
      await phone.close();
    }
  });
});
