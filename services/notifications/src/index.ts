export { service, NotificationsConfig } from "./service.js";
