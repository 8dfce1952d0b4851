import type { Database } from "@tasksvc/db";
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
}

/** The resources over a database (`written` wakes the outbox relay). */
export function tasksResources(db: Database, written: () => void): TasksResources {
  return { repos: repositories(db.sql), tx: (fn) => db.tx((t) => fn(repositories(t))), written };
}
