import { callerOf, type webhookAttemptsRpc, type webhooksRpc } from "@tasksvc/contracts";
import type { Handlers } from "@tasksvc/nats";
import type { AttemptsService } from "./domain/attempts.js";
import type { DeliveryLogService } from "./domain/delivery-log.js";
import type { DeliveryStatsService } from "./domain/delivery-stats.js";
import type { EndpointsService } from "./domain/endpoints-service.js";

export function webhooksHandlers(svc: EndpointsService, log: DeliveryLogService, stats: DeliveryStatsService): Handlers<typeof webhooksRpc> {
  return {
    createEndpoint: ({ limits, ...body }, ctx) => svc.create(callerOf(ctx), body, limits),
    listEndpoints: (i, ctx) => svc.list(callerOf(ctx), i.limit, i.after),
    getEndpoint: (i, ctx) => svc.get(callerOf(ctx), i.endpoint_id),
    updateEndpoint: (i, ctx) => svc.update(callerOf(ctx), i.endpoint_id, i.patch),
    deleteEndpoint: (i, ctx) => svc.remove(callerOf(ctx), i.endpoint_id),
    rotateSecret: (i, ctx) => svc.rotateSecret(callerOf(ctx), i.endpoint_id),
    sendTestEvent: (i, ctx) => svc.sendTestEvent(callerOf(ctx), i.endpoint_id, i.event_type),
    verifyEndpoint: (i, ctx) => svc.verify(callerOf(ctx), i.endpoint_id),
    listDeliveries: (i, ctx) => log.listDeliveries(callerOf(ctx), i.endpoint_id, i),
    listAttempts: (i, ctx) => log.listAttempts(callerOf(ctx), i.endpoint_id, i.delivery_id, i),
    replayDelivery: (i, ctx) => log.replayDelivery(callerOf(ctx), i.endpoint_id, i.delivery_id),
    retryDelivery: (i, ctx) => log.retryDelivery(callerOf(ctx), i.endpoint_id, i.delivery_id),
    replayFailed: (i, ctx) => log.replayFailed(callerOf(ctx), i.endpoint_id, i.since),
    endpointStats: (i, ctx) => stats.endpointStats(callerOf(ctx), i.endpoint_id, i.since),
  };
}

export function attemptsHandlers(svc: AttemptsService): Handlers<typeof webhookAttemptsRpc> {
  return {
    startAttempts: (i) => svc.start(i.jobs),
    recordAttempts: (i) => svc.record(i.results),
    deferAttempts: (i) => svc.defer(i.jobs),
  };
}
