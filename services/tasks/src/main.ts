import { loadConfigOrExit, runMain } from "@tasksvc/config";
import { createLogger } from "@tasksvc/logger";
import { TasksConfig, startTasks } from "./service.js";

const cfg = loadConfigOrExit(TasksConfig);
const log = createLogger({ service: "tasks", level: cfg.LOG_LEVEL });
await runMain("tasks", () => startTasks(cfg, log), log);
