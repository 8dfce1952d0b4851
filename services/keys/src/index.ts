export { service, KeysConfig } from "./service.js";
