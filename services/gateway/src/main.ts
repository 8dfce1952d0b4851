import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { GatewayConfig } from "./config.js";
import { startGateway } from "./service.js";

const cfg = loadConfigOrExit(GatewayConfig);
await runMain("gateway", () => startGateway(cfg, createLogger({ service: "gateway", level: cfg.LOG_LEVEL })));
