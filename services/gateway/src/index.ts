export { startGateway } from "./service.js";
export { GatewayConfig } from "./config.js";
export { buildGateway } from "./app.js";
export { routes } from "./routes.js";
export { requestFingerprint } from "./policies/idempotency.js";
export { buildOpenApi } from "./openapi.js";
