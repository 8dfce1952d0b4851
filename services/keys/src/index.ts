export { service, KeysConfig } from "./service.js";
// For the bench's matched baselines, which run the service's own statements on a copy of its schema.
export { MIGRATIONS_DIR } from "./service.js";
export { keysRepo } from "./repo/keys-repo.js";
