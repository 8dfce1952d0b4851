// Outbound webhooks, the parts with no database and no NATS (issue 11): the Standard Webhooks
// wire format and signing, signing secrets and their encryption at rest, the retry schedule, and
// the egress guard every outbound call passes. Used by the webhooks and delivery services.
export * from "./signing.js";
export * from "./secrets.js";
export * from "./schedule.js";
export * from "./egress.js";
export * from "./settings.js";
