import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { KeysConfig, startKeys } from "./service.js";

const cfg = loadConfigOrExit(KeysConfig);
await runMain("keys", () => startKeys(cfg, createLogger({ service: "keys", level: cfg.LOG_LEVEL })));
