import { type Database, DEFAULT_PAGE_BYTES, type ScanGate, scanGate } from "@tasksvc/db";
import { type Repositories, repositories } from "../repo/repositories.js";

/**
 * What every system of the tasks domain runs on (the service, its group-committed creates, the
 * recurrence scheduler): each takes this one object, beside options of its own, so none imports
 * another to reach the database.
 */
export interface TasksResources {
  /** The repositories on the pool: reads, and writes of one statement. */
  repos: Repositories;
  /** Runs `fn` in one transaction with the repositories bound to it. */
  tx<T>(fn: (r: Repositories) => Promise<T>): Promise<T>;
  /** Called after a transaction that wrote outbox rows commits (wakes the relay). */
  written(): void;
  /** Each organization's share of the connections for lists, searches and the feed. */
  scans: ScanGate;
  /** The bytes of items one reply may carry (a page, a batch's results): under NATS's max_payload. */
  replyBytes: number;
}

/**
 * The resources over a database (`written` wakes the outbox relay; `pageBytes`, the bytes of items
 * a page may carry, is the service's NATS connection's pageBudget(): the default when absent).
 */
export function tasksResources(db: Database, written: () => void, pageBytes?: number): TasksResources {
  return {
    repos: repositories(db.sql, pageBytes),
    tx: (fn) => db.tx((t) => fn(repositories(t, pageBytes))),
    written,
    scans: scanGate({ service: "tasks", connections: db.connections }),
    replyBytes: pageBytes ?? DEFAULT_PAGE_BYTES,
  };
}
