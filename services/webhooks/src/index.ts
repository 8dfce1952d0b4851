export { service, WebhooksConfig } from "./service.js";
// For the bench, which measures them against a database of its own without the rest of the service.
export { MIGRATIONS_DIR } from "./service.js";
export { deliveryStatsService } from "./domain/delivery-stats.js";
export { attemptsRepo } from "./repo/attempts-repo.js";
