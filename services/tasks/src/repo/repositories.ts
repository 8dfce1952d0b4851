import { idempotencyRecords, type Sql } from "@tasksvc/db";
import { dependenciesRepo } from "./dependencies-repo.js";
import { eventStreamRepo } from "./event-stream-repo.js";
import { eventsRepo } from "./events-repo.js";
import { projectsRepo } from "./projects-repo.js";
import { recurrenceRepo } from "./recurrence-repo.js";
import { taskSearch } from "./task-search.js";
import { tasksRepo } from "./tasks-repo.js";

/**
 * Every repository of the tasks service (schema `tasks`, attachments aside), bound to one
 * connection: the pool, or one transaction (domain/resources.ts `tx`), so that whatever a write
 * does through any of them commits or rolls back together. By table group, named as the domain
 * says them: `r.tasks.get`, `r.projects.missing`, `r.events.emit`.
 */
export function repositories(sql: Sql) {
  return {
    tasks: tasksRepo(sql),
    /** Task lists and searches: a filter tree, a sort and a keyset page. */
    search: taskSearch(sql),
    dependencies: dependenciesRepo(sql),
    projects: projectsRepo(sql),
    recurrence: recurrenceRepo(sql),
    events: eventsRepo(sql),
    /** The live stream's order: each event's place in the task-event stream. */
    stream: eventStreamRepo(sql),
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
