// Public surface of the pure subscription core (Pulsar's subscriptions; docs/SUBSCRIPTIONS.md).
// Imports only src/protocol and itself: no Workers APIs, no I/O, no clock.
export * from "./ack-ranges.ts";
export * from "./command.ts";
export * from "./cursor.ts";
export * from "./delivery.ts";
export * from "./dispatch.ts";
export * from "./message-id.ts";
export * from "./permits.ts";
export * from "./rates.ts";
export * from "./reader-window.ts";
export * from "./subscription.ts";
