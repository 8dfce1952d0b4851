export * from "./stack.js";
export * from "./http.js";
export * from "./factories.js";
export * from "./auth-cases.js";
export * from "./context.js";
export * from "./events.js";
export * from "./e2e.js";
export * from "./windows.js";
