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
  concurrency?: number;
  /** Called when an event made deliveries, so the dispatcher sends them now rather than at its next poll. */
  onFannedOut?: () => void;
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots (nor `*`, `>`, spaces): the namespace joins with `_`. */
export const fanOutDurable = (namespace: string) => `${namespace}_webhooks_fanout`;

/**
 * The fan-out is idempotent, so a redelivery after a lost ack, or the same event at two replicas,
 * adds no row. The stream is the tasks service's, not declared here too: two definitions of one
 * stream drift, and each start would update it to its own copy (decision 0014).
 */
export function startTaskEventsConsumer(o: TaskEventsConsumerOptions): Promise<Consumption> {
  return consume(o.nc, {
    stream: webhookMessages.taskEvent.stream(o.namespace),
    durable: fanOutDurable(o.namespace),
    schema: webhookMessages.taskEvent.schema,
    concurrency: o.concurrency ?? 16,
    ackWaitMs: 30_000,
    // The fan-out is idempotent: an ack the server never got brings the event back to add nothing (decision 0020).
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
