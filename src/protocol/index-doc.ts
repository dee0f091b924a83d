/**
 * What `GET /` answers: the API's name, version and route areas, each with the section of the
 * contract that documents it. Kept in step with docs/PROTOCOL.md by test/unit/api-index.test.ts
 * (every `docs` anchor is a heading there; the version is package.json's).
 */

export interface ApiIndex {
  name: "edgelog";
  /** The gateway's version (package.json). */
  version: string;
  /** The protocol version in every path (`/v1`). */
  protocol: "v1";
  /** Where the contract lives, relative to the repository root. */
  docs: string;
  routes: ReadonlyArray<{ methods: readonly string[]; path: string; docs: string }>;
}

export const API_INDEX: ApiIndex = {
  name: "edgelog",
  version: "0.1.0",
  protocol: "v1",
  docs: "docs/PROTOCOL.md",
  routes: [
    { methods: ["GET", "POST"], path: "/v1/topics", docs: "docs/PROTOCOL.md#topics-admin" },
    { methods: ["GET", "PATCH", "DELETE"], path: "/v1/topics/{topic}", docs: "docs/PROTOCOL.md#topics-admin" },
    { methods: ["POST"], path: "/v1/topics/{topic}/records", docs: "docs/PROTOCOL.md#produce" },
    { methods: ["POST"], path: "/v1/topics/{topic}/partitions/{partition}/records", docs: "docs/PROTOCOL.md#produce" },
    { methods: ["GET"], path: "/v1/topics/{topic}/produce/ws", docs: "docs/PROTOCOL.md#produce-over-websocket" },
    { methods: ["GET"], path: "/v1/topics/{topic}/partitions/{partition}/records", docs: "docs/PROTOCOL.md#fetch" },
    { methods: ["GET"], path: "/v1/topics/{topic}/partitions/{partition}/offsets", docs: "docs/PROTOCOL.md#listoffsets" },
    { methods: ["POST"], path: "/v1/producers", docs: "docs/PROTOCOL.md#idempotent-producers-kip-98" },
    { methods: ["GET"], path: "/v1/tenants", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["GET", "PUT", "DELETE"], path: "/v1/tenants/{tenant}", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["GET"], path: "/v1/namespaces/{tenant}", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["GET", "PUT", "DELETE"], path: "/v1/namespaces/{tenant}/{namespace}", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["GET"], path: "/v1/namespaces/{tenant}/{namespace}/policies", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["PUT", "DELETE"], path: "/v1/namespaces/{tenant}/{namespace}/policies/{policy}", docs: "docs/PROTOCOL.md#tenants-and-namespaces" },
    { methods: ["GET"], path: "/v1/groups", docs: "docs/PROTOCOL.md#consumer-groups" },
    { methods: ["GET", "PATCH", "DELETE"], path: "/v1/groups/{group}", docs: "docs/PROTOCOL.md#admin" },
    { methods: ["POST"], path: "/v1/groups/{group}/heartbeat", docs: "docs/PROTOCOL.md#membership-heartbeat" },
    { methods: ["POST"], path: "/v1/groups/{group}/leave", docs: "docs/PROTOCOL.md#membership-heartbeat" },
    { methods: ["GET", "POST"], path: "/v1/groups/{group}/offsets", docs: "docs/PROTOCOL.md#committed-offsets" },
    { methods: ["POST"], path: "/v1/groups/{group}/offsets/fetch", docs: "docs/PROTOCOL.md#committed-offsets" },
    { methods: ["POST"], path: "/v1/groups/{group}/reset-offsets", docs: "docs/PROTOCOL.md#admin" },
    { methods: ["GET"], path: "/v1/topics/{topic}/partitions/{partition}/subscriptions/{subscription}/ws", docs: "docs/PROTOCOL.md#consumers-over-websocket" },
    { methods: ["GET"], path: "/v1/topics/{topic}/partitions/{partition}/readers/ws", docs: "docs/PROTOCOL.md#readers-over-websocket" },
    { methods: ["POST"], path: "/v1/topics/{topic}/partitions/{partition}/subscriptions/{subscription}/receive", docs: "docs/PROTOCOL.md#http-pull-leases" },
    { methods: ["POST"], path: "/v1/topics/{topic}/partitions/{partition}/subscriptions/{subscription}/leases/{lease}/ack", docs: "docs/PROTOCOL.md#http-pull-leases" },
    { methods: ["POST"], path: "/v1/topics/{topic}/partitions/{partition}/subscriptions/{subscription}/leases/{lease}/nack", docs: "docs/PROTOCOL.md#http-pull-leases" },
    { methods: ["GET"], path: "/v1/topics/{topic}/subscriptions", docs: "docs/PROTOCOL.md#subscription-admin" },
    { methods: ["GET", "PUT", "DELETE"], path: "/v1/topics/{topic}/subscriptions/{subscription}", docs: "docs/PROTOCOL.md#subscription-admin" },
    { methods: ["POST"], path: "/v1/topics/{topic}/subscriptions/{subscription}/seek", docs: "docs/PROTOCOL.md#subscription-admin" },
    { methods: ["POST"], path: "/v1/topics/{topic}/subscriptions/{subscription}/skip", docs: "docs/PROTOCOL.md#subscription-admin" },
    { methods: ["POST"], path: "/v1/topics/{topic}/subscriptions/{subscription}/clear-backlog", docs: "docs/PROTOCOL.md#subscription-admin" },
    { methods: ["GET"], path: "/ws/v2/producer/persistent/{tenant}/{namespace}/{topic}", docs: "docs/PROTOCOL.md#pulsar-websocket-api" },
    { methods: ["GET"], path: "/ws/v2/consumer/persistent/{tenant}/{namespace}/{topic}/{subscription}", docs: "docs/PROTOCOL.md#pulsar-websocket-api" },
    { methods: ["GET"], path: "/ws/v2/reader/persistent/{tenant}/{namespace}/{topic}", docs: "docs/PROTOCOL.md#pulsar-websocket-api" },
    { methods: ["GET", "PUT", "POST", "HEAD", "DELETE"], path: "/v1/stream/{path}", docs: "docs/DURABLE-STREAMS.md" },
    { methods: ["GET"], path: "/v1/metrics", docs: "docs/OBSERVABILITY.md" },
    { methods: ["GET"], path: "/v1/health", docs: "docs/PROTOCOL.md#conventions" },
    { methods: ["GET"], path: "/ui/", docs: "docs/OBSERVABILITY.md#web-console" },
  ],
};
