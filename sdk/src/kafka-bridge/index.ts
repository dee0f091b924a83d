/**
 * The Kafka wire-protocol bridge (Node >= 22): unmodified Kafka clients (kcat, librdkafka,
 * kafkajs, the Java client) produce to and consume from Edgelog through it. See
 * docs/KAFKA-BRIDGE.md for the APIs, versions and known differences.
 *
 * This entry point uses node:net and node:zlib: it is not part of the portable SDK (index.ts).
 */

// ---- server ----
export { KafkaBridge, startKafkaBridge, DEFAULT_MAX_FRAME_BYTES } from "./server.ts";
export type { KafkaBridgeOptions } from "./server.ts";
export { bridgeFetch } from "./http.ts";
export { DEFAULT_READ_AHEAD_BYTES } from "./handlers.ts";

// ---- protocol facts (for tools and tests) ----
export { SUPPORTED_APIS, ApiKey } from "./apis.ts";
export type { ApiRange, ApiKeyName } from "./apis.ts";
export { EDGELOG_TO_KAFKA, KafkaError, kafkaErrorCode } from "./errors.ts";
export type { KafkaErrorName } from "./errors.ts";
export { supportedCompressions } from "./compression.ts";
