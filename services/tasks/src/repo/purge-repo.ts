import { taskId } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";
import { ISO_SQL } from "./sql-time.js";

/** A task whose erasure is due: what the purge needs to find its rows. */
export interface DueTask {
  organization_id: string;
  number: number;
}

/** What one chunk of attachments and tickets took with it: the stored files to delete once it committed. */
export interface GoneFiles {
  rows: number;
  fileKeys: string[];
}

/**
 * The statements that erase a task, each bounded by a row count so that none nears the statement
 * timeout however much the task holds. Every chunk is safe to run again and twice at once (two
 * replicas): what it deletes is gone for the second, and each effect that must happen once (the
 * storage counted back, task.purged) rides on a row this statement itself deleted.
 */
export function purgeRepo(sql: Sql) {
  /** Idempotency records of the organization, and those from before records named theirs (ids of attachments and comments are unique). */
  const ofOrg = (org: string) => sql`(organization_id = ${org} or organization_id is null)`;
  return {
    /** Tasks in the trash whose time has come, oldest first. */
    async due(limit: number): Promise<DueTask[]> {
      const rows = await sql<{ organization_id: string; number: string }[]>`
        select organization_id, number::text as number from tasks
        where deleted_at is not null and purge_at <= now()
        order by purge_at limit ${limit}`;
      return rows.map((r) => ({ organization_id: r.organization_id, number: Number(r.number) }));
    },

    /** The task and every task below it, deepest first (they are all in the trash): the order their rows can go in. */
    async subtreeDeepestFirst(org: string, number: number): Promise<number[]> {
      const rows = await sql<{ number: string }[]>`
        with recursive sub(n, depth) as (
          select ${number}::bigint, 0
          union all
          select t.number, sub.depth + 1 from tasks t join sub on t.organization_id = ${org} and t.parent_number = sub.n
        )
        select n::text as number from sub order by depth desc, n desc`;
      return rows.map((r) => Number(r.number));
    },

    /**
     * Taken at the start of every chunk's transaction: false when the task is not due for erasure
     * (restored, or gone) or another replica holds it (then it waits for a later round).
     */
    async claim(org: string, number: number): Promise<boolean> {
      const rows = await sql`
        select 1 from tasks where organization_id = ${org} and number = ${number} and deleted_at is not null and purge_at <= now()
        for update skip locked`;
      return rows.length === 1;
    },

    /** Attachments and upload tickets, with the storage their bytes held; the files go after the commit. */
    async attachments(org: string, number: number, limit: number): Promise<GoneFiles> {
      const [row] = await sql<{ rows: number; keys: string[] }[]>`
        with a as (
          delete from attachments where id in (
            select id from attachments where organization_id = ${org} and task_number = ${number} limit ${limit})
          returning id, file_key, size
        ), k as (
          delete from idempotency where ${ofOrg(org)} and (result->>'id') in (select id from a)
        ), u as (
          delete from uploads where file_key in (
            select file_key from uploads where organization_id = ${org} and task_number = ${number} limit ${limit})
          returning file_key
        ), s as (
          update storage set used_bytes = used_bytes - (select coalesce(sum(size), 0) from a)::bigint
          where organization_id = ${org} and exists (select 1 from a)
        )
        select (select count(*) from a)::int + (select count(*) from u)::int as rows,
          array(select file_key from a union select file_key from u) as keys`;
      return { rows: row?.rows ?? 0, fileKeys: row?.keys ?? [] };
    },

    async versions(org: string, number: number, limit: number): Promise<number> {
      const rows = await sql`
        delete from task_versions where id in (
          select id from task_versions where organization_id = ${org} and task_number = ${number} limit ${limit})
        returning 1`;
      return rows.length;
    },

    /** With the Idempotency-Key records whose result is one of them (a comment's body). */
    async comments(org: string, number: number, limit: number): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        with c as (
          delete from comments where id in (
            select id from comments where organization_id = ${org} and task_number = ${number} limit ${limit})
          returning id
        ), k as (
          delete from idempotency where ${ofOrg(org)} and (result->>'id') in (select id from c)
        )
        select count(*)::int as n from c`;
      return row?.n ?? 0;
    },

    /**
     * The feed keeps the task's events, reduced to `{ id }` without `changes`, and its comments'
     * events reduced to `{ id, task_id }` (a comment's body is the task's content too).
     */
    async reduceEvents(org: string, number: number, limit: number): Promise<number> {
      const id = taskId(number);
      const [row] = await sql<{ n: number }[]>`
        with picked as (
          (select id, jsonb_build_object('id', ${id}::text) as data from events
           where organization_id = ${org} and (payload->'data'->>'id') = ${id} and type like 'task.%'
             and (payload->'data' <> jsonb_build_object('id', ${id}::text) or payload ? 'changes')
           limit ${limit})
          union all
          (select id, jsonb_build_object('id', payload->'data'->'id', 'task_id', ${id}::text) from events
           where organization_id = ${org} and (payload->'data'->>'task_id') = ${id} and type like 'comment.%'
             and payload->'data' <> jsonb_build_object('id', payload->'data'->'id', 'task_id', ${id}::text)
           limit ${limit})
        ), u as (
          update events e set payload = (e.payload - 'changes') || jsonb_build_object('data', picked.data),
            bytes = octet_length(((e.payload - 'changes') || jsonb_build_object('data', picked.data))::text)
          from picked where e.id = picked.id
          returning 1
        )
        select count(*)::int as n from u`;
      return row?.n ?? 0;
    },

    /**
     * The last rows, then the task's own: the small tables, events not yet relayed or set aside, the
     * Idempotency-Key records holding the task, the series slots. True when this statement erased
     * the task's row (then, and only then, its task.purged is written in the same transaction).
     */
    async finish(org: string, number: number): Promise<boolean> {
      const id = taskId(number);
      const reduced = sql`(payload - 'changes') || jsonb_build_object('data', case when payload->>'type' like 'comment.%'
        then jsonb_build_object('id', payload->'data'->'id', 'task_id', ${id}::text) else jsonb_build_object('id', ${id}::text) end)`;
      const names = sql`${id}::text in (payload->'data'->>'id', payload->'data'->>'task_id')`;
      await sql`delete from dependencies where organization_id = ${org} and (blocked_number = ${number} or blocker_number = ${number})`;
      await sql`delete from task_followers where organization_id = ${org} and task_number = ${number}`;
      await sql`delete from task_projects where organization_id = ${org} and task_number = ${number}`;
      await sql`delete from task_sort_values where organization_id = ${org} and task_number = ${number}`;
      await sql`delete from recurrence_slots where organization_id = ${org} and head_number = ${number}`;
      await sql`update recurrence_slots set task_number = null where organization_id = ${org} and task_number = ${number}`;
      await sql`update outbox set payload = ${reduced} where organization_id = ${org} and ${names}`;
      await sql`update outbox_dead_letters set payload = ${reduced} where payload->>'organization_id' = ${org} and ${names}`;
      const [created] = await sql<{ at: string }[]>`
        select to_char(created_at at time zone 'UTC', ${sql.unsafe(ISO_SQL)}) as at from tasks
        where organization_id = ${org} and number = ${number}`;
      // A record from before records named their organization is told apart by the task's creation time.
      await sql`delete from idempotency where (result->>'id') = ${id}
        and (organization_id = ${org} or (organization_id is null and result->>'created_at' = ${created?.at ?? null}::text))`;
      const rows = await sql`delete from tasks where organization_id = ${org} and number = ${number} and deleted_at is not null returning 1`;
      return rows.length === 1;
    },
  };
}
export type PurgeRepo = ReturnType<typeof purgeRepo>;
