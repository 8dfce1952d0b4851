import { main } from "@tasksvc/runtime";
import { service } from "./service.js";

await main(service);
