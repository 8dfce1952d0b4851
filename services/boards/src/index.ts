export { service, BoardsConfig } from "./service.js";
// For the bench's matched baselines, which run the service's own statements.
export { boardsRepo } from "./repo/boards-repo.js";
