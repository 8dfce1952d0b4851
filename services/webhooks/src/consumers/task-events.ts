import type { Check } from "@tasksvc/telemetry";
import { webhookMessages } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { consume, type Consumption, type NatsConnection } from "@tasksvc/nats";
import type { FanOutService } from "../domain/fanout.js";

export interface TaskEventsConsumerOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  fanout: FanOutService;
  /** Events handled at once by this replica. */
  concurrency?: number;
  /** Called when an event made deliveries (the dispatcher sends them now rather than at its next poll). */
  onFannedOut?: () => void;
  /** The replica's health: the consumer reports whether it is attached. */
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots (nor `*`, `>`, spaces): the namespace joins with `_`. */
export const fanOutDurable = (namespace: string) => `${namespace}_webhooks_fanout`;

/**
 * Entry layer for the task-event stream: every event is fanned out into deliveries, then acked.
 * A database error throws, so the consumer naks with backoff and the event comes again; the
 * fan-out is idempotent, so a redelivery after a lost ack, or the same event at two replicas
 * (they share the durable, but an ack wait that runs out hands a message to another), adds no row.
 *
 * The stream belongs to the tasks service (its definition declares it). This service does not
 * declare it too: two definitions of one stream drift, and each start would "update" it to its
 * own copy. When the stream is not there yet (webhooks started first), consume() keeps trying in
 * the background while the service serves its RPCs; events wait in the stream (DeliverPolicy.All),
 * so starting late loses none.
 */
export function startTaskEventsConsumer(o: TaskEventsConsumerOptions): Promise<Consumption> {
  return consume(o.nc, {
    stream: webhookMessages.taskEvent.stream(o.namespace),
    durable: fanOutDurable(o.namespace),
    schema: webhookMessages.taskEvent.schema,
    concurrency: o.concurrency ?? 16,
    // One insert per event: far below this, unless the database is in trouble.
    ackWaitMs: 30_000,
    // The fan-out is idempotent (the key above): an ack the server never got brings the event
    // back to add nothing, so acks need no confirmation round trip (decision 0020).
    confirmAcks: false,
    log: o.log,
    health: o.health,
    async handle(event, meta) {
      const made = await o.fanout.fanOut(event);
      if (made > 0) o.onFannedOut?.();
      if (made > 0) meta.log.debug({ event_id: event.id, organization_id: event.organization_id, deliveries: made }, "event fanned out");
      return "ack";
    },
  });
}
