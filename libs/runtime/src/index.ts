export * from "./definition.js";
export * from "./start.js";
export * from "./main.js";
export * from "./copies.js";
export * from "./turn-batches.js";
export * from "./key-batches.js";
