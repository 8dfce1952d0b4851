import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { BoardsConfig, startBoards } from "./service.js";

const cfg = loadConfigOrExit(BoardsConfig);
await runMain("boards", () => startBoards(cfg, createLogger({ service: "boards", level: cfg.LOG_LEVEL })));
