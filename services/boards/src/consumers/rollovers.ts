import { rolloverMessages } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { consume, type Consumption, type NatsConnection } from "@tasksvc/nats";
import { boardRollovers, type Check } from "@tasksvc/telemetry";
import type { BoardsService } from "../domain/boards-service.js";

export interface RolloversConsumerOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  boards: Pick<BoardsService, "rollOver">;
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. */
export const rolloversDurable = (namespace: string) => `${namespace}_boards_rollovers`;

/**
 * Placing is idempotent (one record per task and day), so a redelivery after a lost ack, or one
 * request at two replicas, places nothing twice; a database error throws, so the consumer naks.
 */
export function startRolloversConsumer(o: RolloversConsumerOptions): Promise<Consumption> {
  const m = rolloverMessages.request;
  return consume(o.nc, {
    stream: m.stream(o.namespace),
    durable: rolloversDurable(o.namespace),
    schema: m.schema,
    concurrency: 4,
    ackWaitMs: 30_000,
    confirmAcks: false,
    log: o.log,
    health: o.health,
    async handle(request) {
      const { placed } = await o.boards.rollOver(request);
      boardRollovers.inc({ outcome: placed ? "placed" : "already" });
      return "ack";
    },
  });
}
