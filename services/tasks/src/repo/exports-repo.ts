import type { ExportFormat, ExportPart, JobStatus } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql, withinBudget } from "@tasksvc/db";

export interface ExportRow {
  id: string;
  organization_id: string;
  format: ExportFormat;
  include: ExportPart[];
  status: JobStatus;
  done: string;
  total: string;
  attempts: number;
  lease_until: Date | null;
  file_key: string | null;
  file_size: string | null;
  error_code: string | null;
  error_detail: string | null;
  created_at: Date;
  completed_at: Date | null;
  expires_at: Date | null;
  /** Whether the lease has passed, by the database's clock. */
  lapsed: boolean;
}

const COLUMNS = `id, organization_id, format, include, status, done::text as done, total::text as total, attempts, lease_until, file_key,
  file_size::text as file_size, error_code, error_detail, created_at, completed_at, expires_at, coalesce(lease_until < now(), true) as lapsed`;
const EXPORT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
const ms = (n: number) => `${Math.max(0, Math.round(n))} milliseconds`;

/** The exports table: the state of each export's job. Every write of a run names its attempt, so a run that lost its lease changes nothing. */
export function exportsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(COLUMNS);
  return {
    /** Held to the commit, so two requests cannot both take the organization's last place. */
    async active(org: string): Promise<number> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.exports:${org}`}, 0))`;
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from exports where organization_id = ${org} and status in ('queued', 'running')`;
      return row?.n ?? 0;
    },

    async insert(e: { id: string; org: string; user: string; format: ExportFormat; include: ExportPart[] }): Promise<ExportRow> {
      const [row] = await sql<ExportRow[]>`
        insert into exports (id, organization_id, requested_by, format, include)
        values (${e.id}, ${e.org}, ${e.user}, ${e.format}, ${e.include}::text[])
        returning ${cols}`;
      if (!row) throw new Error("insert returned no row");
      return row;
    },

    async get(org: string, id: string): Promise<ExportRow | undefined> {
      const [row] = await sql<ExportRow[]>`select ${cols} from exports where organization_id = ${org} and id = ${id}`;
      return row;
    },

    async list(org: string, limit: number, after: string | undefined) {
      const page = sql`
        select ${cols}, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at, octet_length(row_to_json(exports)::text) as bytes
        from exports where organization_id = ${org}
          ${keysetAfter(sql, after, EXPORT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      const rows = await sql<
        (ExportRow & Budgeted & { cursor_at: string })[]
      >`${withinBudget(sql, page, "item.bytes", "item.created_at desc, item.id desc", pageBytes)}`;
      return pageOf(
        rows,
        limit,
        (r) => r,
        (r) => [r.cursor_at, r.id],
      );
    },

    /**
     * A new run of an export waiting, or running under a lease that passed: its row with the run's
     * attempt; "busy" while another export of the organization runs (one at a time each, so one
     * organization's exports never take every worker); undefined when another run holds it or it is
     * over. In a transaction: the organization's lock makes the check and the claim one step.
     */
    async claim(org: string, id: string, leaseMs: number): Promise<ExportRow | "busy" | undefined> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.exports:${org}`}, 0))`;
      const busy = await sql`
        select 1 from exports where organization_id = ${org} and id <> ${id} and status = 'running' and lease_until >= now() limit 1`;
      if (busy.length > 0) return "busy";
      const [row] = await sql<ExportRow[]>`
        update exports set status = 'running', attempts = attempts + 1, lease_until = now() + ${ms(leaseMs)}::interval, done = 0
        where organization_id = ${org} and id = ${id} and (status = 'queued' or (status = 'running' and (lease_until is null or lease_until < now())))
        returning ${cols}`;
      return row;
    },

    /** Progress, and the lease carried on; false when the run no longer holds it. */
    async renew(id: string, attempt: number, done: number, total: number, leaseMs: number): Promise<boolean> {
      const rows = await sql`
        update exports set done = ${done}, total = ${total}, lease_until = now() + ${ms(leaseMs)}::interval
        where id = ${id} and attempts = ${attempt} and status = 'running'
        returning 1`;
      return rows.length === 1;
    },

    async succeed(id: string, attempt: number, f: { fileKey: string; size: number; done: number; total: number; ttlMs: number }): Promise<boolean> {
      const rows = await sql`
        update exports set status = 'succeeded', done = ${f.done}, total = ${f.total}, file_key = ${f.fileKey}, file_size = ${f.size}, lease_until = null,
          completed_at = now(), expires_at = now() + ${ms(f.ttlMs)}::interval
        where id = ${id} and attempts = ${attempt} and status = 'running'
        returning 1`;
      return rows.length === 1;
    },

    async fail(id: string, attempt: number, code: string, detail: string): Promise<boolean> {
      const rows = await sql`
        update exports set status = 'failed', error_code = ${code}, error_detail = ${detail}, lease_until = null, completed_at = now()
        where id = ${id} and attempts = ${attempt} and status = 'running'
        returning 1`;
      return rows.length === 1;
    },

    /** The run stops (a process stopping, an error to retry): the next delivery takes it over at once. */
    async release(id: string, attempt: number): Promise<void> {
      await sql`update exports set lease_until = now() where id = ${id} and attempts = ${attempt} and status = 'running'`;
    },

    /**
     * Waiting, or abandoned by a run, with no message published for `olderThanMs`: theirs may have been lost (a crash between the
     * commit and the publish). Marked published, so replicas sweeping together publish each once.
     */
    async republish(olderThanMs: number, limit: number): Promise<Array<{ organization_id: string; id: string }>> {
      return sql`
        update exports set published_at = now() where id in (
          select id from exports
          where status in ('queued', 'running') and published_at < now() - ${ms(olderThanMs)}::interval and (lease_until is null or lease_until < now())
          order by created_at limit ${limit} for update skip locked)
        returning organization_id, id`;
    },

    /** Files whose link has expired. */
    async expiredFiles(limit: number): Promise<Array<{ id: string; file_key: string }>> {
      return sql`select id, file_key from exports where file_key is not null and expires_at < now() order by expires_at limit ${limit}`;
    },

    async forgetFile(id: string, fileKey: string): Promise<void> {
      await sql`update exports set file_key = null where id = ${id} and file_key = ${fileKey}`;
    },

    /** Finished exports are listed for `retentionMs` after they finished, then forgotten. */
    async deleteFinished(retentionMs: number, limit: number): Promise<number> {
      const rows = await sql`
        delete from exports where id in (
          select id from exports where completed_at < now() - ${ms(retentionMs)}::interval and file_key is null limit ${limit})
        returning 1`;
      return rows.length;
    },
  };
}
export type ExportsRepo = ReturnType<typeof exportsRepo>;
