import type { DailySection, DailyStatus } from "@tasksvc/contracts";
import { idempotencyRecords, mapPgError, PG, type PgErrorRule, type Sql } from "@tasksvc/db";

export interface EntryRow {
  id: string;
  section: DailySection;
  task_number: string;
  created_at: Date;
}

/** The task already has an entry on the user's day (entries_task_key): placed by a concurrent request. */
export class AlreadyPlaced extends Error {
  constructor() {
    super("the task already has an entry on this day");
    this.name = "AlreadyPlaced";
  }
}

const ENTRY_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "entries_task_key", to: () => new AlreadyPlaced() }];

/** All SQL of the boards service (schema `boards`). Bound to a pool or to one transaction. */
export function boardsRepo(sql: Sql) {
  const idempotency = idempotencyRecords(sql);
  return {
    async sections(org: string, user: string, date: string): Promise<Array<{ section: DailySection; status: DailyStatus }>> {
      return sql<{ section: DailySection; status: DailyStatus }[]>`
        select section, status from sections where organization_id = ${org} and user_id = ${user} and date = ${date}::date`;
    },

    async entries(org: string, user: string, date: string): Promise<EntryRow[]> {
      return sql<EntryRow[]>`
        select id, section, task_number::text as task_number, created_at from entries
        where organization_id = ${org} and user_id = ${user} and date = ${date}::date
        order by entries.created_at, entries.id`;
    },

    async setStatus(org: string, user: string, date: string, section: DailySection, status: DailyStatus): Promise<void> {
      await sql`
        insert into sections (organization_id, user_id, date, section, status) values (${org}, ${user}, ${date}::date, ${section}, ${status})
        on conflict (organization_id, user_id, date, section) do update set status = excluded.status, updated_at = now()`;
    },

    /** The first entry on a section that is NOT_FILLED (or has no row) makes it FILLING. */
    async markFilling(org: string, user: string, date: string, section: DailySection): Promise<void> {
      await sql`
        insert into sections as s (organization_id, user_id, date, section, status) values (${org}, ${user}, ${date}::date, ${section}, 'FILLING')
        on conflict (organization_id, user_id, date, section) do update set status = 'FILLING', updated_at = now()
          where s.status = 'NOT_FILLED'`;
    },

    /** The entries of these tasks on the day, locked for the planning transaction. */
    async entriesOf(org: string, user: string, date: string, numbers: number[]): Promise<Array<{ id: string; section: DailySection; task_number: string }>> {
      return sql<{ id: string; section: DailySection; task_number: string }[]>`
        select id, section, task_number::text as task_number from entries
        where organization_id = ${org} and user_id = ${user} and date = ${date}::date and task_number = any(${numbers}::bigint[])
        for update`;
    },

    async deleteEntries(ids: string[]): Promise<void> {
      if (ids.length) await sql`delete from entries where id = any(${ids}::text[])`;
    },

    /** Throws AlreadyPlaced. */
    async insertEntry(id: string, org: string, user: string, date: string, section: DailySection, number: number): Promise<EntryRow> {
      const [row] = await sql<EntryRow[]>`
        insert into entries (id, organization_id, user_id, date, section, task_number) values (${id}, ${org}, ${user}, ${date}::date, ${section}, ${number})
        returning id, section, task_number::text as task_number, created_at`.catch((e: unknown) => mapPgError(e, ENTRY_RULES));
      if (!row) throw new Error("insert returned no row");
      return row;
    },

    async deleteEntry(org: string, user: string, id: string): Promise<boolean> {
      const rows = await sql`delete from entries where id = ${id} and organization_id = ${org} and user_id = ${user} returning 1`;
      return rows.length === 1;
    },

    /** The service's Idempotency-Key records (libs/db). */
    idempotency,
  };
}
export type BoardsRepo = ReturnType<typeof boardsRepo>;
