import type { Sql } from "@tasksvc/db";
import { TASK_COLUMNS, type TaskRow } from "./task-json.js";

export type DueRow = TaskRow & { organization_id: string };

/**
 * The predicates of the two partial indexes of migration 0024, word for word: the planner uses a
 * partial index only for a query whose conditions imply its own.
 */
const OPEN = "due_date is not null and status <> 'COMPLETED' and not archived";
export const SOON_OWED = `${OPEN} and due_soon_sent is distinct from due_date`;
export const OVERDUE_OWED = `${OPEN} and due_overdue_sent is distinct from due_date`;

export function dueRepo(sql: Sql) {
  const cols = sql.unsafe(TASK_COLUMNS);
  const soonOwed = sql.unsafe(SOON_OWED);
  const overdueOwed = sql.unsafe(OVERDUE_OWED);
  return {
    /**
     * Marks up to `limit` open tasks whose due date has passed as announced for it (both events: a
     * date first seen past gets no task.due_soon) and returns them as reads show them. Rows another
     * transaction holds are skipped (a replica's tick, a user's write), so replicas share the work
     * and never wait; the lock is the one an UPDATE of non-key columns takes anyway. Call it in the
     * transaction that writes the events.
     */
    async markOverdue(now: Date, limit: number): Promise<DueRow[]> {
      return sql<DueRow[]>`
        with c as (
          select organization_id as org, number as n from tasks
          where ${overdueOwed} and due_date <= ${now} and deleted_at is null
          order by due_date
          limit ${limit}
          for no key update skip locked
        ), u as (
          update tasks t set due_overdue_sent = t.due_date, due_soon_sent = t.due_date
          from c where t.organization_id = c.org and t.number = c.n
          returning t.*
        )
        select organization_id, ${cols} from u order by u.due_date, u.organization_id, u.number`;
    },

    /** As markOverdue, for the tasks due after `now` and no later than `until`. */
    async markSoon(now: Date, until: Date, limit: number): Promise<DueRow[]> {
      return sql<DueRow[]>`
        with c as (
          select organization_id as org, number as n from tasks
          where ${soonOwed} and due_date > ${now} and due_date <= ${until} and deleted_at is null
          order by due_date
          limit ${limit}
          for no key update skip locked
        ), u as (
          update tasks t set due_soon_sent = t.due_date
          from c where t.organization_id = c.org and t.number = c.n
          returning t.*
        )
        select organization_id, ${cols} from u order by u.due_date, u.organization_id, u.number`;
    },
  };
}
export type DueRepo = ReturnType<typeof dueRepo>;
