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
  /** The replica's health: the consumer reports whether it is attached. */
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. */
export const rolloversDurable = (namespace: string) => `${namespace}_boards_rollovers`;

/**
 * Entry layer for the rollover stream, which the tasks service owns and publishes to: each request
 * is placed, then acked. Placing is idempotent (one record per task and day), so a redelivery after
 * a lost ack, or one request at two replicas, places nothing twice; acks need no confirmation. A
 * database error throws, so the consumer naks with backoff and the request comes again. Until the
 * tasks service has made the stream, consume() waits for it in the background.
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
