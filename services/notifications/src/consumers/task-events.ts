import { NotifiableEvent, taskEventsStream } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { consume, type Consumption, type NatsConnection } from "@tasksvc/nats";
import type { Check } from "@tasksvc/telemetry";
import type { IngestSystem } from "../domain/ingest.js";

export interface TaskEventsConsumerOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  ingest: IngestSystem;
  concurrency?: number;
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. */
export const notificationsDurable = (namespace: string) => `${namespace}_notifications`;

/**
 * Acknowledged after the event's statement committed; a crash before the ack brings the event back,
 * and the unique key (event, user, type) makes the second write add nothing. The stream is the
 * tasks service's and is not declared here.
 */
export function startTaskEventsConsumer(o: TaskEventsConsumerOptions): Promise<Consumption> {
  return consume(o.nc, {
    stream: taskEventsStream(o.namespace),
    durable: notificationsDurable(o.namespace),
    schema: NotifiableEvent,
    concurrency: o.concurrency ?? 8,
    ackWaitMs: 30_000,
    // Idempotent: an ack the server never got brings the event back to add nothing.
    confirmAcks: false,
    log: o.log,
    health: o.health,
    async handle(event, meta) {
      const made = await o.ingest.ingest(event);
      if (made > 0) meta.log.debug({ event_id: event.id, organization_id: event.organization_id, notifications: made }, "event notified");
      return "ack";
    },
  });
}
