export { service, DeliveryConfig } from "./service.js";
