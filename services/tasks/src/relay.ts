import { type EventType, taskEventSubject } from "@tasksvc/contracts";
import { startOutboxRelay, type Database, type OutboxRelay, type OutboxRow } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { eventStreamRepo } from "./repo/event-stream-repo.js";
import { outboxPublisher, type JetStreamClient, type NatsConnection } from "@tasksvc/nats";

export interface RelayOptions {
  db: Database;
  js: JetStreamClient;
  nc: Pick<NatsConnection, "info">;
  namespace: string;
  log: Logger;
  /** For rows no local write announced (other replicas, a crashed relay). */
  pollMs?: number;
  batch?: number;
}

interface TaskOutboxRow extends OutboxRow {
  type: EventType;
  organization_id: string;
}

/**
 * The lock name is the one every earlier version took: old and new replicas never relay at once.
 * A row too large to publish goes to outbox_dead_letters (migration 0015) and the rest go on.
 */
export function startRelay(opts: RelayOptions): OutboxRelay {
  return startOutboxRelay<TaskOutboxRow>({
    db: opts.db,
    publisher: outboxPublisher(opts.js),
    table: "outbox",
    lock: "tasks.outbox.relay",
    subject: (row) => taskEventSubject(opts.namespace, row.type),
    log: opts.log,
    // Each event's place in the stream, for a live stream that resumes.
    onPublished: (t, rows, seqs) => eventStreamRepo(t).record(rows, seqs),
    maxPayload: () => opts.nc.info?.max_payload,
    deadLetters: "outbox_dead_letters",
    pollMs: opts.pollMs,
    batch: opts.batch,
  });
}
