import type { DailySection, DailyStatus } from "@tasksvc/contracts";
import { idempotencyRecords, mapPgError, PG, type PgErrorRule, type Sql } from "@tasksvc/db";

export interface EntryRow {
  id: string;
  section: DailySection;
  task_number: string;
  created_at: string;
}

/** An entry's created_at as Date#toISOString() renders it, by Postgres: no Date per row (decision 0020). */
const CREATED_AT_VALUE = `to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
const ENTRY_CREATED_AT = `${CREATED_AT_VALUE} as created_at`;

/** The task already has an entry on the user's day (entries_task_key): placed by a concurrent request. */
export class AlreadyPlaced extends Error {
  constructor() {
    super("the task already has an entry on this day");
    this.name = "AlreadyPlaced";
  }
}

const ENTRY_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "entries_task_key", to: () => new AlreadyPlaced() }];

export function boardsRepo(sql: Sql) {
  const idempotency = idempotencyRecords(sql);
  const createdAt = sql.unsafe(ENTRY_CREATED_AT);
  const createdAtValue = sql.unsafe(CREATED_AT_VALUE);
  return {
    /**
     * One statement, so one round trip per board read (decision 0020), and one row: the entries come
     * as one JSON array, parsed once, instead of a row each that repeated the sections' JSON.
     */
    async day(org: string, user: string, date: string): Promise<{ sections: Array<{ section: DailySection; status: DailyStatus }>; entries: EntryRow[] }> {
      const [row] = await sql<Array<{ sections: Array<{ section: DailySection; status: DailyStatus }>; entries: EntryRow[] }>>`
        select
          (select coalesce(json_agg(json_build_object('section', section, 'status', status)), '[]')
            from sections where organization_id = ${org} and user_id = ${user} and date = ${date}::date) as sections,
          (select coalesce(json_agg(json_build_object('id', id, 'section', section, 'task_number', task_number::text, 'created_at', ${createdAtValue})
              order by created_at, id), '[]')
            from entries where organization_id = ${org} and user_id = ${user} and date = ${date}::date) as entries`;
      return { sections: row?.sections ?? [], entries: row?.entries ?? [] };
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

    /** Serializes the writes to one user's day, so a section's count holds until the commit. */
    async lockDay(org: string, user: string, date: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`boards.day:${org}:${user}:${date}`}, 0))`;
    },

    async sectionCount(org: string, user: string, date: string, section: DailySection): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from entries where organization_id = ${org} and user_id = ${user} and date = ${date}::date and section = ${section}`;
      return row?.n ?? 0;
    },

    /** Locked for the planning transaction. */
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
        returning id, section, task_number::text as task_number, ${createdAt}`.catch((e: unknown) => mapPgError(e, ENTRY_RULES));
      if (!row) throw new Error("insert returned no row");
      return row;
    },

    async deleteEntry(org: string, user: string, id: string): Promise<boolean> {
      const rows = await sql`delete from entries where id = ${id} and organization_id = ${org} and user_id = ${user} returning 1`;
      return rows.length === 1;
    },

    /** In the transaction that places the entry, so the record and the entry go together. */
    async recordRollover(org: string, number: number, date: string): Promise<boolean> {
      const rows = await sql`
        insert into rollovers (organization_id, task_number, date) values (${org}, ${number}, ${date}::date)
        on conflict do nothing
        returning 1`;
      return rows.length === 1;
    },

    /** Places an entry unless the task is on the day already (in either section): false then. */
    async placeIfAbsent(id: string, org: string, user: string, date: string, section: DailySection, number: number): Promise<boolean> {
      const rows = await sql`
        insert into entries (id, organization_id, user_id, date, section, task_number) values (${id}, ${org}, ${user}, ${date}::date, ${section}, ${number})
        on conflict on constraint entries_task_key do nothing
        returning 1`;
      return rows.length === 1;
    },

    /** Rollover records of days more than a week gone: no scheduler asks for those days any more. */
    async sweepRollovers(): Promise<number> {
      const rows = await sql`delete from rollovers where date < current_date - 7 returning 1`;
      return rows.length;
    },

    idempotency,

    /** Everything of an erased task, on every user's boards; answers how many entries went. */
    async forgetTask(org: string, number: number): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        with e as (delete from entries where organization_id = ${org} and task_number = ${number} returning 1),
        r as (delete from rollovers where organization_id = ${org} and task_number = ${number})
        select count(*)::int as n from e`;
      return row?.n ?? 0;
    },
  };
}
export type BoardsRepo = ReturnType<typeof boardsRepo>;
