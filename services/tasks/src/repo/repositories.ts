import { DEFAULT_PAGE_BYTES, idempotencyRecords, type Sql } from "@tasksvc/db";
import { attachmentsRepo } from "./attachments-repo.js";
import { dependenciesRepo } from "./dependencies-repo.js";
import { eventStreamRepo } from "./event-stream-repo.js";
import { eventsRepo } from "./events-repo.js";
import { projectsRepo } from "./projects-repo.js";
import { recurrenceRepo } from "./recurrence-repo.js";
import { taskSearch } from "./task-search.js";
import { tasksRepo } from "./tasks-repo.js";

/**
 * Every repository of the tasks service (schema `tasks`), bound to one
 * connection: the pool, or one transaction (domain/resources.ts `tx`), so that whatever a write
 * does through any of them commits or rolls back together. By table group, named as the domain
 * says them: `r.tasks.get`, `r.projects.missing`, `r.events.emit`. `pageBytes`: the bytes of items
 * one page of a list whose items can be large may carry (DESIGN 20, Size).
 */
export function repositories(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  return {
    tasks: tasksRepo(sql, pageBytes),
    /** Task lists and searches: a filter tree, a sort and a keyset page. */
    search: taskSearch(sql, pageBytes),
    dependencies: dependenciesRepo(sql),
    projects: projectsRepo(sql, pageBytes),
    recurrence: recurrenceRepo(sql),
    /** Attachments, upload tickets and each organization's storage. */
    attachments: attachmentsRepo(sql),
    events: eventsRepo(sql, pageBytes),
    /** The live stream's order: each event's place in the task-event stream. */
    stream: eventStreamRepo(sql, pageBytes),
    /** The service's Idempotency-Key records (libs/db). */
    idempotency: idempotencyRecords(sql),

    /**
     * Runs `fn` in a savepoint of the transaction these are bound to: when `fn` throws, what it
     * wrote is undone (its task numbers given back) and the transaction goes on without it.
     */
    async savepoint<T>(fn: () => Promise<T>): Promise<T> {
      await sql`savepoint nested`;
      try {
        const result = await fn();
        await sql`release savepoint nested`;
        return result;
      } catch (e) {
        await sql`rollback to savepoint nested`;
        throw e;
      }
    },
  };
}
export type Repositories = ReturnType<typeof repositories>;
