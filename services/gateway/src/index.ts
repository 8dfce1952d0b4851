export { service } from "./service.js";
export { GatewayConfig } from "./config.js";
export { createClients, type Clients } from "./clients.js";
export { buildGateway } from "./app.js";
export { operations, resources } from "./routes/index.js";
export type { Operation, Resource } from "./pipeline/operation.js";
export { requestFingerprint } from "./pipeline/idempotency.js";
export { buildOpenApi } from "./openapi/document.js";
