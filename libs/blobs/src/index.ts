export * from "./store.js";
export * from "./setting.js";
export * from "./nats.js";
export * from "./s3.js";
