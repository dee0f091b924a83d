/** `POST /v1/producers`: a new idempotent producer id, epoch 0 (Kafka InitProducerId). */
import type { Hono } from "hono";
import type { AppEnv } from "../gateway/context.ts";
import { metadataStore } from "../metadata/store.ts";
import { toEdgelogError } from "../protocol/errors.ts";
import type { InitProducerResponse } from "../protocol/types.ts";

export function producerRoutes(app: Hono<AppEnv>): void {
  app.post("/v1/producers", async (c) => {
    const r = await metadataStore(c.env).initProducerId();
    if (!r.ok) throw toEdgelogError(r);
    const body: InitProducerResponse = { producerId: r.producerId, producerEpoch: r.producerEpoch };
    return c.json(body);
  });
}
