/** A Kafka bridge context over a scripted Edgelog (the SDK client's `fetch` option), for handler tests. */
import { EdgelogClient } from "../../sdk/src/client.ts";
import type { BridgeContext } from "../../sdk/src/kafka-bridge/handlers.ts";
import { TopicNames } from "../../sdk/src/kafka-bridge/names.ts";

/** The bridge's context with `fake` answering every Edgelog request; topics of public/default. */
export function bridgeContext(fake: typeof fetch): BridgeContext {
  return {
    client: new EdgelogClient({ baseUrl: "http://edgelog.test", fetch: fake }),
    headers: {},
    fetch: fake,
    names: new TopicNames(),
    advertisedHost: "127.0.0.1",
    advertisedPort: 9092,
    clusterId: "c",
    autoCreateTopics: false,
    defaultPartitions: 1,
  };
}
