// Public surface of the shared protocol module (gateway + SDK).
export * from "./errors.ts";
export * from "./types.ts";
export * from "./limits.ts";
export * from "./names.ts";
export * from "./config.ts";
export * from "./encoding.ts";
export * from "./groups.ts";
export * from "./policies.ts";
