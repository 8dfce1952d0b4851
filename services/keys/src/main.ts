import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { KeysConfig, startKeys } from "./service.js";

const cfg = loadConfigOrExit(KeysConfig);
const log = createLogger({ service: "keys", level: cfg.LOG_LEVEL });
await runMain("keys", () => startKeys(cfg, log), log);
