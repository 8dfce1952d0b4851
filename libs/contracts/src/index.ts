export * from "./codes.js";
export * from "./auth.js";
export * from "./common.js";
export * from "./rpc.js";
export * from "./keys.js";
export * from "./tasks.js";
export * from "./boards.js";
