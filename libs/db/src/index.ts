export * from "./pool.js";
export * from "./pool-health.js";
export { TransactionConnectionLost, type TxOptions } from "./transactions.js";
export * from "./migrate.js";
export * from "./errors.js";
// Row ids come from @tasksvc/secrets (random material lives there); re-exported for the repositories.
export { newId } from "@tasksvc/secrets";
export * from "./keyset.js";
export * from "./values.js";
export * from "./idempotency.js";
export * from "./outbox.js";
export * from "./audit.js";
export * from "./sweep.js";
export * from "./scans.js";
