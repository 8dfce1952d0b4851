export { service, BoardsConfig } from "./service.js";
