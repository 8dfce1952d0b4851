import { auditOutbox, DEFAULT_PAGE_BYTES, idempotencyRecords, type Sql } from "@tasksvc/db";
import { attachmentsRepo } from "./attachments-repo.js";
import { commentsRepo } from "./comments-repo.js";
import { customFieldsRepo } from "./custom-fields-repo.js";
import { dependenciesRepo } from "./dependencies-repo.js";
import { dueRepo } from "./due-repo.js";
import { eventStreamRepo } from "./event-stream-repo.js";
import { eventsRepo } from "./events-repo.js";
import { exportsRepo } from "./exports-repo.js";
import { followersRepo } from "./followers-repo.js";
import { importMapsRepo } from "./import-maps-repo.js";
import { importsRepo } from "./imports-repo.js";
import { labelsRepo } from "./labels-repo.js";
import { projectsRepo } from "./projects-repo.js";
import { purgeRepo } from "./purge-repo.js";
import { recurrenceRepo } from "./recurrence-repo.js";
import { removalsRepo } from "./removals-repo.js";
import { rewindsRepo } from "./rewinds-repo.js";
import { asOfRepo } from "./as-of-repo.js";
import { taskSearch } from "./task-search.js";
import { tasksRepo } from "./tasks-repo.js";
import { trashRepo } from "./trash-repo.js";

/** Bound to one connection, the pool or one transaction, so whatever a write does through any of them commits or rolls back together. */
export function repositories(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  return {
    tasks: tasksRepo(sql, pageBytes),
    search: taskSearch(sql, pageBytes),
    asOf: asOfRepo(sql, pageBytes),
    rewinds: rewindsRepo(sql),
    trash: trashRepo(sql, pageBytes),
    purge: purgeRepo(sql),
    dependencies: dependenciesRepo(sql),
    followers: followersRepo(sql),
    comments: commentsRepo(sql, pageBytes),
    projects: projectsRepo(sql, pageBytes),
    labels: labelsRepo(sql, pageBytes),
    customFields: customFieldsRepo(sql, pageBytes),
    recurrence: recurrenceRepo(sql),
    due: dueRepo(sql),
    removals: removalsRepo(sql),
    attachments: attachmentsRepo(sql),
    exports: exportsRepo(sql, pageBytes),
    imports: importsRepo(sql, pageBytes),
    importMaps: importMapsRepo(sql),
    events: eventsRepo(sql, pageBytes),
    stream: eventStreamRepo(sql, pageBytes),
    idempotency: idempotencyRecords(sql),
    /** Written in the transaction of the change it records. */
    audit: auditOutbox(sql),

    /** When `fn` throws, what it wrote is undone (its task numbers given back) and the transaction goes on. */
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
