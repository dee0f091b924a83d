/**
 * QA: content negotiation of the compact produce answer. RFC 9110 §12.4.2: a media range with
 * q=0 is "not acceptable", so `...produce-summary+json;q=0` must get the full answer
 * (src/gateway/http.ts acceptsMediaType; found by QA, fixed).
 */
import { describe as suite, expect, it } from "vitest";
import { PRODUCE_SUMMARY_MEDIA_TYPE } from "../../src/protocol/index.ts";
import { call, createTopic, randomTopic } from "./helpers.ts";

suite("QA produce summary: Accept q-values", () => {
  for (const accept of [`${PRODUCE_SUMMARY_MEDIA_TYPE};q=0, application/json`, `application/json, ${PRODUCE_SUMMARY_MEDIA_TYPE}; q=0.0`]) {
    it(`Accept: ${accept} -> the full answer (the summary type is refused with q=0)`, async () => {
      const t = randomTopic();
      await createTopic(t);
      const res = await call(`/v1/topics/${t}/partitions/0/records`, {
        method: "POST",
        headers: { "content-type": "application/json", accept },
        body: JSON.stringify({ records: [{ value: "a", timestamp: 5 }] }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ topic: `public/default/${t}`, records: [{ partition: 0, offset: 0, timestamp: 5 }] });
    });
  }
});
