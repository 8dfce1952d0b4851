import { TaskEvent, taskEventsStream } from "@tasksvc/contracts";
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
 * own copy. Instead, when the stream is not there yet (webhooks started first), the consumer is
 * retried in the background until it is, and the service serves its RPCs meanwhile; events wait
 * in the stream (DeliverPolicy.All), so starting late loses none.
 */
export function startTaskEventsConsumer(o: TaskEventsConsumerOptions): { stop(): Promise<void> } {
  const stream = taskEventsStream(o.namespace);
  const durable = fanOutDurable(o.namespace);
  let consumption: Consumption | undefined;
  let stopping = false;
  let wake: (() => void) | undefined;

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  const started = (async () => {
    for (let attempt = 1; !stopping; attempt++) {
      try {
        const c = await consume(o.nc, {
          stream,
          durable,
          schema: TaskEvent,
          concurrency: o.concurrency ?? 16,
          // One insert per event: far below this, unless the database is in trouble.
          ackWaitMs: 30_000,
          log: o.log,
          async handle(event, meta) {
            const made = await o.fanout.fanOut(event);
            if (made > 0) meta.log.debug({ event_id: event.id, organization_id: event.organization_id, deliveries: made }, "event fanned out");
            return "ack";
          },
        });
        if (stopping) await c.stop();
        else consumption = c;
        return;
      } catch (err) {
        if (stopping) return;
        // Most often: the tasks service has not created the stream yet.
        o.log.warn({ err, stream, durable, attempt }, "task-event consumer not started; retrying");
        await pause(Math.min(250 * 2 ** (attempt - 1), 5000));
      }
    }
  })();

  return {
    async stop() {
      stopping = true;
      wake?.();
      await started;
      await consumption?.stop();
    },
  };
}
