export * from "./bounded.js";
export * from "./health.js";
export * from "./metrics.js";
export * from "./ops-server.js";
export * from "./tracing.js";
export * from "./tenant-metrics.js";
