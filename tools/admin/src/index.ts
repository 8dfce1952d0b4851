export { runCli, COMMANDS } from "./cli.js";
