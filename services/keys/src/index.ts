export { startKeys, KeysConfig } from "./service.js";
