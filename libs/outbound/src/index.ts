// Outbound webhooks, the parts with no database and no NATS: the Standard Webhooks wire format
// and signing, the retry schedule, and the egress guard every outbound call passes. Used by the
// webhooks and delivery services. Sealing secrets at rest is @tasksvc/secrets'.
export * from "./signing.js";
export * from "./schedule.js";
export * from "./egress.js";
export * from "./settings.js";
export * from "./destination.js";
