import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { GatewayConfig } from "./config.js";
import { startGateway } from "./service.js";

const cfg = loadConfigOrExit(GatewayConfig);
const log = createLogger({ service: "gateway", level: cfg.LOG_LEVEL });
await runMain("gateway", () => startGateway(cfg, log), log);
