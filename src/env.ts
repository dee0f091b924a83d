/**
 * Bindings of the Worker (wrangler.toml). The Durable Object namespaces are typed with their
 * classes so stubs expose the RPC methods.
 */
import type { BenchDO } from "../durable-objects/bench.ts";
import type { MetadataDO } from "../durable-objects/metadata.ts";
import type { PartitionDO } from "../durable-objects/partition.ts";

export interface Env {
  /** One object per topic-partition, named `${topicId}/${partition}`. */
  PARTITION: DurableObjectNamespace<PartitionDO>;
  /** One object, named "cluster": topics and producer ids. */
  METADATA: DurableObjectNamespace<MetadataDO>;
  /** Bench-only: raw single-row inserts, the ceiling a produce is measured against. */
  BENCH: DurableObjectNamespace<BenchDO>;
  /** "1" exposes /bench/* routes. @default "0" */
  EDGELOG_BENCH_ROUTES?: string;
  /**
   * "off" sends every produce request as its own partition RPC instead of coalescing
   * concurrent requests for one partition (src/gateway/append-coalescer.ts). @default "on"
   */
  EDGELOG_APPEND_COALESCING?: string;
  /** Durable Streams long-poll timeout in ms (docs/DURABLE-STREAMS.md). @default "20000" */
  STREAMS_LONG_POLL_TIMEOUT_MS?: string;
  /** Origins allowed to call /v1 from a browser, comma-separated, or "*" (docs/PROTOCOL.md, CORS). @default "*" */
  EDGELOG_CORS_ORIGINS?: string;
  /** Request headers allowed cross-origin besides Content-Type, Accept, Authorization, comma-separated. @default "" */
  EDGELOG_CORS_ALLOW_HEADERS?: string;
}
