export * from "./connect.js";
export * from "./serve.js";
export * from "./client.js";
export * from "./json.js";
export * from "./streams.js";
export * from "./consumer.js";
export * from "./sleeper.js";
export * from "./marks.js";
