import { callerOf, type webhooksRpc } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { EndpointsService } from "./domain/endpoints-service.js";

/** Entry layer: maps each RPC operation of the catalog onto the domain. */
export function webhooksHandlers(svc: EndpointsService): Handlers<typeof webhooksRpc> {
  return {
    createEndpoint: (i, ctx) => svc.create(callerOf(ctx), i),
    listEndpoints: (i, ctx) => svc.list(callerOf(ctx), i.limit, i.after),
    getEndpoint: (i, ctx) => svc.get(callerOf(ctx), i.endpoint_id),
    updateEndpoint: (i, ctx) => svc.update(callerOf(ctx), i.endpoint_id, i.patch),
    deleteEndpoint: (i, ctx) => svc.remove(callerOf(ctx), i.endpoint_id),
  };
}
