export { service, TasksConfig } from "./service.js";
