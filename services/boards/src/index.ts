export { startBoards, BoardsConfig } from "./service.js";
