import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { BoardsConfig, startBoards } from "./service.js";

const cfg = loadConfigOrExit(BoardsConfig);
const log = createLogger({ service: "boards", level: cfg.LOG_LEVEL });
await runMain("boards", () => startBoards(cfg, log), log);
