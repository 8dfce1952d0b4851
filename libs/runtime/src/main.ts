import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import type { BaseConfig, ServiceDefinition } from "./definition.js";
import { startService } from "./start.js";

/**
 * A service process's whole entry point (`await main(service)` in its main.ts): settings read
 * once (every problem printed, exit 1), a logger named after the service, then runMain's rules
 * (one line for a startup error, graceful stop on SIGTERM/SIGINT, process guards).
 */
export async function main<C extends BaseConfig, R>(def: ServiceDefinition<C, R>): Promise<void> {
  const cfg = loadConfigOrExit(def.config);
  const log = createLogger({ service: def.name, level: cfg.LOG_LEVEL });
  await runMain(def.name, () => startService(def, cfg, log), log);
}
