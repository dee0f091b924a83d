/**
 * Bad-input request generators and the per-request contract, shared by the workers-tier
 * fuzzer (test/workers/fuzz.test.ts) and `npm run fuzz` against a dev server (test/fuzz/run.ts).
 * Issue 15, part 4. fast-check generates requests for every route family (topic admin, produce
 * JSON and binary, fetch and list-offsets, consumer groups, Durable Streams, wrong methods,
 * huge, truncated, deeply nested and aborted bodies), mostly malformed, some valid.
 *
 * The contract per request ({@link check}): no 5xx; an error is JSON from the one table
 * (src/protocol/errors.ts) with the table's status and `retriable` (HEAD: status only); and
 * the caller compares {@link snapshot}s around a rejected request: it must change nothing.
 *
 * The generators avoid only what would make state change by itself (a 1 s TTL, a short
 * retention) or make a request wait (long-poll, SSE, fetch maxWaitMs): their own tests cover them.
 */
import fc from "fast-check";
import { encodeBatch } from "../../src/codec/index.ts";
import { ERRORS, type ErrorCode } from "../../src/protocol/errors.ts";
import { BATCH_MEDIA_TYPE } from "../../src/protocol/types.ts";

const uid = crypto.randomUUID().slice(0, 8);
/** The fixture names of this process (fresh per run; the workers tier shares storage per file). */
/** Fixtures: an existing and an absent name per resource kind. */
export const T = `fz-${uid}`;
export const T2 = `fz-absent-${uid}`;
export const S = `/v1/stream/fz-${uid}`;
export const S2 = `/v1/stream/fz-absent-${uid}`;
export const G = `fzg-${uid}`;
export const G2 = `fzg-absent-${uid}`;

/** One generated request; `body` "huge" = 8 MiB + 1 bytes, "aborted" = a stream that errors mid-body. */
export interface FuzzRequest {
  family: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | "huge" | "aborted" | null;
}

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

/** Strings that break naive parsers. */
const nasty = fc.constantFrom(
  "",
  " ",
  "0",
  "-0",
  "00",
  "01",
  "+1",
  "-1",
  "1.5",
  "1e3",
  "1e309",
  "NaN",
  "Infinity",
  "9".repeat(30),
  "9007199254740993",
  "null",
  "true",
  "[]",
  "{}",
  '{"',
  "\u0000",
  "%00",
  "%ff",
  "../",
  "..",
  ".",
  "a/b",
  "é",
  "\ud83d\ude00",
  "a".repeat(300),
  "\t1",
  "1 ",
);
const junkString = fc.oneof(nasty, fc.string({ maxLength: 40 }), fc.string({ unit: "binary", maxLength: 20 }));
const junkNumber = fc.oneof(fc.constantFrom(-1, 0, 1, 2, 1.5, -0, 2 ** 31, 2 ** 53, 2 ** 53 + 2, 1e20, Number.MAX_SAFE_INTEGER), fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true }));
const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: "small" },
  junkString,
  junkNumber,
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.oneof(junkString, junkNumber), { maxLength: 3 }),
  fc.dictionary(fc.constantFrom("a", "value", "key", "__proto__"), fc.oneof(junkString, junkNumber), { maxKeys: 2 }),
);

const topicName = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(T, T2) },
  { weight: 1, arbitrary: fc.constantFrom("bad name", ".", "..", "a".repeat(250), "x%2Fy", `public/default/${T}`, "a/b/c", "%E0%A4%A", "") },
);
const partitionSeg = fc.oneof({ weight: 4, arbitrary: fc.constantFrom("0", "1") }, { weight: 1, arbitrary: fc.constantFrom("2", "-1", "01", "1.0", "x", "99999999999999999999", "") });
const groupName = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(G, G2) }, { weight: 1, arbitrary: fc.constantFrom("bad group", "g".repeat(250), "%00", "..") });
const streamPath = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(S, S2) },
  { weight: 1, arbitrary: fc.constantFrom("/v1/stream/", "/v1/stream/%00", "/v1/stream/a/../b", `/v1/stream/${"s".repeat(2000)}`, "/v1/stream/%ff%fe") },
);

/** 100,000 nested arrays: a recursive parser or walker would overflow its stack. */
const DEEP = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;

/** Encodes a JSON-ish value, sometimes cut short (truncated body). */
const jsonBody = (value: fc.Arbitrary<unknown>) =>
  fc.tuple(value, fc.oneof({ weight: 5, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() })).map(([v, cut]) => {
    const text = JSON.stringify(v) ?? "";
    return cut === null || text.length === 0 ? text : text.slice(0, cut % text.length);
  });

const bodyVariant = (value: fc.Arbitrary<unknown>): fc.Arbitrary<FuzzRequest["body"]> =>
  fc.oneof({ weight: 20, arbitrary: jsonBody(value) }, { weight: 1, arbitrary: fc.constantFrom<FuzzRequest["body"]>("huge", "aborted", null, "", "\u0000\u0001", "\xff\xfe", DEEP) });

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constantFrom("text/plain", "application/json; charset=latin1", BATCH_MEDIA_TYPE, "", "application/x-www-form-urlencoded", "application/json\u0000") },
);

const encodingName = fc.oneof(fc.constantFrom("string", "base64", "json"), junkValue);
const record = fc.record(
  {
    key: fc.oneof(junkString, fc.constant(null), junkValue),
    value: fc.oneof(junkString, fc.constant(null), junkValue),
    headers: fc.oneof(fc.array(fc.record({ key: junkValue, value: junkValue }), { maxLength: 2 }), junkValue),
    timestamp: junkValue,
    partition: junkNumber,
  },
  { requiredKeys: [] },
);
const produceBody = fc.oneof(
  // Well-formed records too, so produce successes (and the snapshots after them) are exercised.
  fc.record({ records: fc.array(fc.record({ key: fc.option(fc.string({ maxLength: 8 })), value: fc.string({ maxLength: 16 }) }), { minLength: 1, maxLength: 3 }) }),
  fc.record({ records: fc.array(record, { maxLength: 4 }) }, { requiredKeys: ["records"] }),
  fc.record({ records: fc.array(record, { maxLength: 2 }), keyEncoding: encodingName, valueEncoding: encodingName }, { requiredKeys: ["records"] }),
  fc.record({ records: fc.array(record, { maxLength: 2 }), producerId: junkNumber, producerEpoch: junkNumber, baseSequence: junkNumber, acks: junkValue }, { requiredKeys: ["records"] }),
  junkValue,
);

/** A valid one-record batch, then maybe mutated: a flipped byte, cut short, or a lying record count. */
const binaryBatch = fc.tuple(fc.string({ maxLength: 30 }), fc.constantFrom("none", "flip", "cut", "count"), fc.nat()).map(([v, how, n]) => {
  const b = encodeBatch({}, [{ key: null, value: new TextEncoder().encode(v), headers: [], timestamp: 1 }]);
  if (how === "flip") b[n % b.length] = (b[n % b.length]! + 1) & 0xff;
  if (how === "cut") return b.slice(0, n % b.length);
  if (how === "count") b.set([0x7f, 0xff, 0xff, 0xff], 57); // recordCount (Kafka batch v2 offset 57)
  return b;
});

const admin: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .record({ name: fc.oneof(topicName, junkValue), partitions: fc.oneof(junkNumber, junkValue), configs: fc.oneof(junkValue, configPatch()) }, { requiredKeys: [] })
    .chain((b) => bodyVariant(fc.constant(b)).map((body) => ({ family: "admin", method: "POST", path: "/v1/topics", headers: { "content-type": "application/json" }, body }))),
  topicName.map((t) => ({ family: "admin", method: "GET", path: `/v1/topics/${t}`, headers: {}, body: null })),
  fc
    .tuple(
      topicName,
      bodyVariant(
        fc.oneof(
          fc.record({ configs: configPatch() }),
          fc.record({ partitions: fc.oneof(fc.constantFrom(0, 1, -1, 1.5, "2", 2000), junkValue), configs: configPatch() }, { requiredKeys: [] }),
        ),
      ),
    )
    .map(([t, body]) => ({
      family: "admin",
      method: "PATCH",
      path: `/v1/topics/${t}`,
      headers: { "content-type": "application/json" },
      body,
    })),
  // Deletes only what is not a fixture (T2 and junk names).
  fc.constantFrom(T2, "bad name", "..").map((t) => ({ family: "admin", method: "DELETE", path: `/v1/topics/${t}`, headers: {}, body: null })),
);

/** Config maps whose valid values cannot make state change by itself (no short retention). */
function configPatch(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(
      { "max.message.bytes": 2048 },
      { "max.message.bytes": "4096" },
      { "cleanup.policy": "compact, delete" },
      { "message.timestamp.type": "LogAppendTime" },
      { "retention.ms": "604800000" },
      { "segment.bytes": 1048576 },
    ),
    fc.dictionary(
      fc.constantFrom("max.message.bytes", "retention.ms", "retention.bytes", "segment.bytes", "cleanup.policy", "message.timestamp.type", "bogus"),
      fc.oneof(nasty, fc.constantFrom(63, 1047553, "2048 ", "02048", "del ete", 1048575, -2, 14)),
      { minKeys: 1, maxKeys: 3 },
    ),
    junkValue,
  );
}

const produce: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(topicName, contentType, bodyVariant(produceBody))
    .map(([t, ct, body]) => ({ family: "produce-json", method: "POST", path: `/v1/topics/${t}/records`, headers: { "content-type": ct }, body })),
  fc.tuple(topicName, partitionSeg, contentType, bodyVariant(produceBody)).map(([t, p, ct, body]) => ({
    family: "produce-json",
    method: "POST",
    path: `/v1/topics/${t}/partitions/${p}/records`,
    headers: { "content-type": ct },
    body,
  })),
  fc.tuple(topicName, partitionSeg, binaryBatch).map(([t, p, b]) => ({
    family: "produce-binary",
    method: "POST",
    path: `/v1/topics/${t}/partitions/${p}/records`,
    headers: { "content-type": BATCH_MEDIA_TYPE },
    body: b,
  })),
);

const query = (params: Record<string, fc.Arbitrary<string>>) =>
  fc.record(params, { requiredKeys: [] }).map((o) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(o)) if (v !== undefined) q.set(k, v);
    return q.toString();
  });
const offsetParam = fc.oneof(fc.constantFrom("0", "1", "2", "1000"), nasty);
const fetching: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(
      topicName,
      partitionSeg,
      // maxWaitMs only 0 or malformed: a valid wait at the log end would hold the request.
      query({
        offset: offsetParam,
        maxRecords: fc.oneof(fc.constantFrom("1", "10000", "10001"), nasty),
        maxBytes: nasty,
        maxWaitMs: fc.constantFrom("0", "-1", "x", "1.5", "01", ""),
        minBytes: fc.constantFrom("0", "1", "x", "-1"),
        encoding: fc.constantFrom("string", "base64", "json", "bogus", ""),
      }),
      fc.constantFrom("application/json", BATCH_MEDIA_TYPE, "text/html", "*/*"),
    )
    .map(([t, p, q, accept]) => ({ family: "fetch", method: "GET", path: `/v1/topics/${t}/partitions/${p}/records?${q}`, headers: { accept }, body: null })),
  fc
    .tuple(topicName, partitionSeg, query({ spec: fc.oneof(fc.constantFrom("earliest", "latest", "max_timestamp", "timestamp"), nasty), timestamp: offsetParam }))
    .map(([t, p, q]) => ({ family: "offsets", method: "GET", path: `/v1/topics/${t}/partitions/${p}/offsets?${q}`, headers: {}, body: null })),
);

const tps = fc.oneof(
  fc.array(fc.record({ topic: fc.oneof(topicName, junkValue), partitions: fc.oneof(fc.array(junkNumber, { maxLength: 3 }), junkValue) }, { requiredKeys: [] }), { maxLength: 2 }),
  junkValue,
);
const groups: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(
      groupName,
      bodyVariant(
        fc.record(
          {
            memberEpoch: junkNumber,
            memberId: fc.oneof(junkString, fc.constant(null)),
            subscribedTopicNames: fc.oneof(fc.array(topicName, { maxLength: 2 }), junkValue),
            subscribedTopicRegex: fc.oneof(fc.constantFrom("(a+)+$", "fz-.*", "(?=x)", "(a)\\1", "[", "\\pL{1000}\\pL{1000}\\pL{1000}"), junkString),
            // At least 30 s: a member expiring mid-run is fine (the snapshot holds no members) but keeps it quiet.
            sessionTimeoutMs: fc.oneof(fc.constantFrom(30_000, 99, 1_800_001), junkValue),
            rebalanceTimeoutMs: junkValue,
            assignor: fc.oneof(fc.constantFrom("range", "sticky", "bogus"), junkValue),
            ownedPartitions: tps,
            instanceId: junkValue,
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([g, body]) => ({ family: "groups", method: "POST", path: `/v1/groups/${g}/heartbeat`, headers: { "content-type": "application/json" }, body })),
  fc.tuple(groupName, bodyVariant(fc.record({ memberId: junkString, memberEpoch: junkNumber, temporary: junkValue }, { requiredKeys: [] }))).map(([g, body]) => ({
    family: "groups",
    method: "POST",
    path: `/v1/groups/${g}/leave`,
    headers: { "content-type": "application/json" },
    body,
  })),
  fc
    .tuple(
      groupName,
      bodyVariant(
        fc.record(
          {
            memberId: junkString,
            memberEpoch: junkNumber,
            offsets: fc.oneof(fc.array(fc.record({ topic: topicName, partition: junkNumber, offset: junkNumber, metadata: junkValue }, { requiredKeys: [] }), { maxLength: 2 }), junkValue),
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([g, body]) => ({ family: "groups", method: "POST", path: `/v1/groups/${g}/offsets`, headers: { "content-type": "application/json" }, body })),
  fc.tuple(groupName, bodyVariant(fc.record({ topics: tps, autoOffsetReset: junkValue }, { requiredKeys: [] }))).map(([g, body]) => ({
    family: "groups",
    method: "POST",
    path: `/v1/groups/${g}/offsets/fetch`,
    headers: { "content-type": "application/json" },
    body,
  })),
  fc
    .tuple(groupName, query({ topic: fc.oneof(topicName, nasty), autoOffsetReset: fc.oneof(fc.constantFrom("earliest", "latest"), nasty) }))
    .map(([g, q]) => ({ family: "groups", method: "GET", path: `/v1/groups/${g}/offsets?${q}`, headers: {}, body: null })),
  fc
    .tuple(
      groupName,
      bodyVariant(
        fc.record(
          {
            topics: tps,
            spec: fc.oneof(
              fc.record({ to: fc.constantFrom("earliest", "latest", "offset", "timestamp", "bogus"), offset: junkNumber, timestamp: junkNumber }, { requiredKeys: ["to"] }),
              junkValue,
            ),
            dryRun: junkValue,
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([g, body]) => ({ family: "groups", method: "POST", path: `/v1/groups/${g}/reset-offsets`, headers: { "content-type": "application/json" }, body })),
  // Group configs: heartbeat.interval.ms may be valid; offsets.retention.ms only malformed or too small.
  fc
    .tuple(
      groupName,
      bodyVariant(
        fc.record(
          {
            configs: fc.oneof(
              // Never a valid offsets.retention.ms (>= 1000): the fixture group's offsets would expire
              // on a timer later in the run, a change no rejected request made.
              fc.record(
                {
                  "heartbeat.interval.ms": fc.oneof(nasty, fc.constantFrom(49, 999, "05000", 60_001)),
                  "offsets.retention.ms": fc.oneof(nasty, fc.constantFrom(0, 49, 999, "05000", "60001 ")),
                  bogus: fc.oneof(nasty, fc.constantFrom(1, "1")),
                },
                { requiredKeys: [] },
              ),
              junkValue,
            ),
          },
          { requiredKeys: [] },
        ),
      ),
    )
    .map(([g, body]) => ({
      family: "groups",
      method: "PATCH",
      path: `/v1/groups/${g}`,
      headers: { "content-type": "application/json" },
      body,
    })),
  groupName.map((g) => ({ family: "groups", method: "GET", path: `/v1/groups/${g}`, headers: {}, body: null })),
  fc.constantFrom(G2, "bad group").map((g) => ({ family: "groups", method: "DELETE", path: `/v1/groups/${g}`, headers: {}, body: null })),
);

const dsHeaders = fc.record(
  {
    "content-type": fc.oneof(fc.constantFrom("text/plain", "application/json", "application/octet-stream", "TEXT/PLAIN", "text/plain; charset=utf-8"), nasty),
    "Stream-Seq": fc.oneof(fc.constantFrom("a", "b", "0001", ""), nasty),
    // Valid TTLs and expiries only far away: a stream must not expire mid-run by itself.
    "Stream-TTL": fc.oneof(fc.constantFrom("86400", "00", "+1", "1.0", "1e3", "-1"), nasty),
    "Stream-Expires-At": fc.constantFrom("2099-01-01T00:00:00Z", "tomorrow", "2099-13-01T00:00:00Z", ""),
    "Stream-Closed": fc.constantFrom("true", "false", "TRUE", "yes"),
    "Producer-Id": fc.oneof(fc.constantFrom("p1", "p".repeat(300)), nasty),
    "Producer-Epoch": fc.oneof(fc.constantFrom("0", "1", "00", "01"), nasty),
    "Producer-Seq": fc.oneof(fc.constantFrom("0", "1", "2", "00"), nasty),
    "Stream-Forked-From": fc.oneof(fc.constantFrom(S, S2, "/v1/stream/nope"), nasty),
    "If-None-Match": fc.constantFrom("*", '"x"', 'W/"y"'),
  },
  { requiredKeys: [] },
);
const streams: fc.Arbitrary<FuzzRequest> = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("PUT", "POST"),
      streamPath,
      dsHeaders,
      fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom<FuzzRequest["body"]>("[]", "[1,2", "{}", "", "huge", "aborted", null)),
    )
    .map(([method, path, headers, body]) => ({
      family: "streams",
      method,
      path,
      headers: sanitizeHeaders(headers),
      body,
    })),
  // Reads: no valid `live` (long-poll and SSE wait by design).
  fc
    .tuple(
      fc.constantFrom("GET", "HEAD"),
      streamPath,
      query({ offset: fc.oneof(fc.constantFrom("-1", "now", "0000000000000000_0000000000000000", "1_1"), nasty), live: fc.constantFrom("", "bogus", "LONG-POLL"), cursor: nasty }),
    )
    .map(([method, path, q]) => ({
      family: "streams",
      method,
      path: `${path}?${q}`,
      headers: {},
      body: null,
    })),
  fc.constantFrom(S2, "/v1/stream/", "/v1/stream/%00").map((path) => ({ family: "streams", method: "DELETE", path, headers: {}, body: null })),
);

/** Header values outside printable ASCII are replaced (the Fetch API refuses CR, LF and NUL; workerd warns on the rest). */
function sanitizeHeaders(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k] = /^[\t\x20-\x7e]*$/.test(v) ? v : "x?";
  return out;
}

const templates = [
  "/v1/topics",
  `/v1/topics/${T}`,
  `/v1/topics/${T}/records`,
  `/v1/topics/${T}/partitions/0/records`,
  `/v1/topics/${T}/partitions/0/offsets`,
  "/v1/producers",
  "/v1/groups",
  `/v1/groups/${G}`,
  `/v1/groups/${G}/heartbeat`,
  `/v1/groups/${G}/offsets`,
  "/v1/health",
  S,
  "/nope",
  "/",
  "/v1",
  "/v2/topics",
];
const wrongMethods: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "PROPFIND", "PURGE", "REPORT"),
    fc.constantFrom(...templates),
    fc.constantFrom<FuzzRequest["body"]>(null, "{}", "huge"),
  )
  // Valid combinations that would change a fixture are left to the other families.
  .filter(([m, p]) => !(m === "DELETE" && (p.endsWith(T) || p.endsWith(G) || p === S)) && !(m === "PUT" && p === S))
  .map(([method, path, body]) => ({ family: "wrong-method", method, path, headers: { "content-type": "application/json" }, body: method === "GET" || method === "HEAD" ? null : body }));

/** Any request of any family. */
export const anyRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(admin, produce, fetching, groups, streams, wrongMethods);

// ---------------------------------------------------------------------------------------------
// Sending, checking, state snapshots
// ---------------------------------------------------------------------------------------------

const HUGE = new Uint8Array(8 * 1024 * 1024 + 1).fill(0x20);

function requestBody(b: FuzzRequest["body"]): BodyInit | null {
  if (b === "huge") return HUGE;
  if (b === "aborted") {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (sent++ < 2) ctl.enqueue(new TextEncoder().encode('{"records":[{"value":"x"},'));
        else ctl.error(new Error("client aborted"));
      },
    });
  }
  return b;
}

/** What a check needs of an answer. */
export interface FuzzResponse {
  status: number;
  contentType: string | null;
  text: string;
}

/** Sends one request to the gateway: `SELF.fetch` in the workers tier, `fetch` to a dev server in the CLI. */
export type Caller = (path: string, init?: RequestInit) => Promise<Response>;

export async function send(call: Caller, r: FuzzRequest): Promise<FuzzResponse> {
  const noBody = r.method === "GET" || r.method === "HEAD";
  const body = noBody ? null : requestBody(r.body);
  // duplex "half": a streamed body (the aborted one) needs it in Node's fetch; workerd ignores it.
  const init = { method: r.method, headers: sanitizeHeaders(r.headers), body, duplex: "half" };
  let res: Response;
  try {
    res = await call(r.path, init as RequestInit);
  } catch (err) {
    // Node's fetch fails the request itself when its body stream errors: the client gave up,
    // there is no answer to check (status 0), only the state to compare.
    if (r.body === "aborted") return { status: 0, contentType: null, text: "client aborted" };
    throw err;
  }
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

/** Violations of the per-request contract (empty = fine). */
export function check(r: FuzzRequest, res: FuzzResponse): string[] {
  if (res.status === 0) return [];
  if (res.status >= 500) return [`5xx ${res.status}: ${res.text.slice(0, 200)}`];
  if (res.status < 400) return [];
  if (r.method === "HEAD") return Object.values(ERRORS).some((e) => e.httpStatus === res.status) ? [] : [`HEAD status ${res.status} is no table status`];
  if (res.contentType?.startsWith("application/json") !== true) return [`error ${res.status} is not JSON (${res.contentType}): ${res.text.slice(0, 200)}`];
  let body: { error?: { code?: unknown; retriable?: unknown; message?: unknown } };
  try {
    body = JSON.parse(res.text) as typeof body;
  } catch {
    return [`error ${res.status} body does not parse: ${res.text.slice(0, 200)}`];
  }
  const code = body.error?.code;
  if (typeof code !== "string" || !Object.hasOwn(ERRORS, code)) return [`unknown code ${String(code)}`];
  const spec = ERRORS[code as ErrorCode];
  const out: string[] = [];
  if (spec.httpStatus !== res.status) out.push(`${code} answered ${res.status}, table says ${spec.httpStatus}`);
  if (spec.retriable !== body.error?.retriable) out.push(`${code} retriable ${String(body.error?.retriable)}, table says ${spec.retriable}`);
  if (typeof body.error?.message !== "string") out.push(`${code} without a message`);
  return out;
}

/** Everything a rejected request must leave as it was. */
export async function snapshot(call: Caller): Promise<string> {
  const text = async (path: string) => {
    const res = await call(path);
    return `${res.status} ${await res.text()}`;
  };
  const head = async (path: string) => {
    const res = await call(path, { method: "HEAD" });
    return `${res.status} ${res.headers.get("Stream-Next-Offset")} ${res.headers.get("Stream-Closed")}`;
  };
  const parts = await Promise.all([
    text("/v1/topics"),
    text(`/v1/topics/${T}`),
    head(S),
    head(S2),
    text(`/v1/groups/${G}/offsets`),
    call(`/v1/groups/${G2}`).then((r) => r.text().then(() => String(r.status))),
  ]);
  return parts.join("\n");
}

/** Creates the fixtures: topic T (2 partitions, 2 records each), stream S, group G with committed offsets. */
export async function createFixtures(call: Caller): Promise<void> {
  const post = (path: string, body: unknown) => call(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const expectStatus = async (what: string, res: Response, status: number) => {
    const text = await res.text();
    if (res.status !== status) throw new Error(`fixture ${what}: ${res.status} ${text}`);
  };
  await expectStatus("topic", await post("/v1/topics", { name: T, partitions: 2 }), 201);
  for (const p of [0, 1]) await expectStatus("records", await post(`/v1/topics/${T}/partitions/${p}/records`, { records: [{ value: "a" }, { value: "b" }] }), 200);
  await expectStatus("stream", await call(S, { method: "PUT", headers: { "content-type": "text/plain" }, body: "hello" }), 201);
  await expectStatus("group", await post(`/v1/groups/${G}/reset-offsets`, { topics: [{ topic: T }], spec: { to: "offset", offset: 1 } }), 200);
}

/** A request in one line (for reports). */
export function describeRequest(r: FuzzRequest): string {
  const body = typeof r.body === "string" ? JSON.stringify(r.body.slice(0, 300)) : r.body instanceof Uint8Array ? `${r.body.length} bytes` : String(r.body);
  return `${r.method} ${r.path.slice(0, 200)} ${JSON.stringify(r.headers)} body ${body}`;
}

/**
 * Sends requests one at a time and checks each against the contract, comparing the fixture
 * snapshot around every rejected request (taken again lazily after a success).
 */
export class FuzzSession {
  readonly #call: Caller;
  #current: string | null = null;
  /** Requests by `family status`. */
  readonly statuses = new Map<string, number>();

  constructor(call: Caller) {
    this.#call = call;
  }

  /** Sends `r`; resolves with the answer and the violations (empty = fine). */
  async step(r: FuzzRequest): Promise<{ res: FuzzResponse; violations: string[] }> {
    this.#current ??= await snapshot(this.#call);
    const res = await send(this.#call, r);
    const key = `${r.family} ${res.status}`;
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
    const violations = check(r, res);
    if (res.status >= 400 || res.status === 0) {
      const after = await snapshot(this.#call);
      if (after !== this.#current) violations.push(`rejected (${res.status}) but state changed:\n--- before\n${this.#current}\n--- after\n${after}`);
      this.#current = after;
    } else {
      this.#current = null;
    }
    return { res, violations };
  }
}
