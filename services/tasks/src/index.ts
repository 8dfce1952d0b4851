export { startTasks, TasksConfig } from "./service.js";
