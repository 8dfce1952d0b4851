export { service, WebhooksConfig } from "./service.js";
