import { PurgeEvent, taskEventSubject, taskEventsStream, taskNumber } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { consume, type Consumption, type NatsConnection } from "@tasksvc/nats";
import type { Check } from "@tasksvc/telemetry";
import type { BoardsRepo } from "../repo/boards-repo.js";

export interface PurgedTasksConsumerOptions {
  nc: NatsConnection;
  namespace: string;
  log: Logger;
  repo: Pick<BoardsRepo, "forgetTask">;
  health?: { check(name: string, fn: Check): () => void };
}

/** Durable names may not contain dots: the namespace joins with `_`. */
export const purgedTasksDurable = (namespace: string) => `${namespace}_boards_purged_tasks`;

/**
 * task.purged from the tasks service's event stream: the erased task's entries go
 * from every board. A delete is idempotent, so a redelivery removes nothing more; a database error
 * throws, so the consumer naks and the event comes back.
 */
export function startPurgedTasksConsumer(o: PurgedTasksConsumerOptions): Promise<Consumption> {
  return consume(o.nc, {
    stream: taskEventsStream(o.namespace),
    durable: purgedTasksDurable(o.namespace),
    filterSubject: taskEventSubject(o.namespace, "task.purged"),
    schema: PurgeEvent,
    concurrency: 2,
    ackWaitMs: 30_000,
    confirmAcks: false,
    log: o.log,
    health: o.health,
    async handle(event, meta) {
      const number = taskNumber(event.data.id);
      if (number === null) return "ack";
      const gone = await o.repo.forgetTask(event.organization_id, number);
      if (gone > 0) meta.log.debug({ event_id: event.id, organization_id: event.organization_id, entries: gone }, "erased task's entries removed");
      return "ack";
    },
  });
}
