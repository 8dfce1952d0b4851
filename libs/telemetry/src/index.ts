export * from "./bounded.js";
export * from "./health.js";
export * from "./metrics.js";
export * from "./ops-server.js";
export * from "./tracing.js";
