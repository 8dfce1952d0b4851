export * from "./pool.js";
export * from "./migrate.js";
export * from "./errors.js";
export * from "./ids.js";
export * from "./keyset.js";
export * from "./idempotency.js";
