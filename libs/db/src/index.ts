export * from "./pool.js";
export { TransactionConnectionLost, type TxOptions } from "./transactions.js";
export * from "./migrate.js";
export * from "./errors.js";
export * from "./ids.js";
export * from "./keyset.js";
export * from "./idempotency.js";
export * from "./outbox.js";
export * from "./sweep.js";
