import { type Actor, type Import, type ImportFormat, type ImportLineError, type ImportStatus, MAX_IMPORT_ERRORS } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, jsonb, KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql, withinBudget } from "@tasksvc/db";
import { iso } from "./task-json.js";

export interface ImportRow {
  id: string;
  organization_id: string;
  user_id: string;
  file_key: string;
  format: ImportFormat;
  dry_run: boolean;
  status: ImportStatus;
  bytes_total: string;
  bytes_done: string;
  lines_done: string;
  created_count: string;
  failed_count: string;
  errors: ImportLineError[];
  created_at: Date;
  completed_at: Date | null;
  /** Who started it and by which request; null for an import queued before they were recorded. */
  actor: Actor | null;
  request_id: string | null;
}

export function toImport(r: ImportRow): Import {
  return {
    id: r.id,
    status: r.status,
    dry_run: r.dry_run,
    progress: { done: Number(r.bytes_done), total: Number(r.bytes_total) },
    counts: { created: Number(r.created_count), failed: Number(r.failed_count) },
    errors: r.errors.map((e) => ({ line: e.line, pointer: e.pointer, code: e.code, detail: e.detail })),
    created_at: iso(r.created_at),
    completed_at: r.completed_at === null ? null : iso(r.completed_at),
  };
}

const COLUMNS = `id, organization_id, user_id, file_key, format, dry_run, status, bytes_total::text as bytes_total, bytes_done::text as bytes_done,
  lines_done::text as lines_done, created_count::text as created_count, failed_count::text as failed_count, errors, created_at, completed_at,
  actor, request_id`;
const IMPORT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

export interface Cleanable {
  id: string;
  file_key: string;
  dry_run: boolean;
}

/** Where a chunk of lines stands when its transaction takes the import's row. */
export interface ImportMark {
  status: ImportStatus;
  lines_done: number;
  errors_kept: number;
}

export interface ChunkOutcome {
  linesDone: number;
  bytesDone: number;
  created: number;
  failed: number;
  errors: ImportLineError[];
}

/** The imports table and an import file's upload ticket; the maps of what a file's ids became are in import-maps-repo. */
export function importsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(COLUMNS);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    async insertUpload(u: { fileKey: string; org: string; fileName: string; contentType: string; size: number; ttlMs: number }): Promise<Date> {
      const [row] = await sql<{ expires_at: Date }[]>`
        insert into uploads (file_key, organization_id, task_number, purpose, file_name, content_type, size, expires_at)
        values (${u.fileKey}, ${u.org}, null, 'import', ${u.fileName}, ${u.contentType}, ${u.size}, now() + ${u.ttlMs} * interval '1 millisecond')
        returning expires_at`;
      if (!row) throw new Error("insert returned no row");
      return row.expires_at;
    },

    /** Held to the commit: two creates of one organization count its unfinished imports in turn. */
    async lockAndCountUnfinished(org: string): Promise<number> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.imports:${org}`}, 0))`;
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from imports where organization_id = ${org} and status in ('queued', 'running')`;
      return row?.n ?? 0;
    },

    async insert(i: {
      id: string;
      org: string;
      user: string;
      actor: Actor;
      requestId: string;
      fileKey: string;
      format: ImportFormat;
      dryRun: boolean;
      bytes: number;
    }): Promise<ImportRow> {
      const [row] = await sql<ImportRow[]>`
        insert into imports (id, organization_id, user_id, actor, request_id, file_key, format, dry_run, bytes_total)
        values (${i.id}, ${i.org}, ${i.user}, ${jsonb(sql, i.actor)}, ${i.requestId}, ${i.fileKey}, ${i.format}, ${i.dryRun}, ${i.bytes})
        returning ${cols}`;
      if (!row) throw new Error("insert returned no row");
      await sql`update uploads set state = 'registered' where file_key = ${i.fileKey}`;
      return row;
    },

    async get(org: string, id: string): Promise<ImportRow | undefined> {
      const [row] = await sql<ImportRow[]>`select ${cols} from imports where organization_id = ${org} and id = ${id}`;
      return row;
    },

    /** Newest first; cut at the byte budget too, as each may hold a hundred errors. */
    async list(org: string, limit: number, after: string | undefined) {
      const page = sql`
        select ${cols}, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at, octet_length(errors::text) + 400 as bytes
        from imports
        where organization_id = ${org}
          ${keysetAfter(sql, after, IMPORT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      const rows = await sql<
        (ImportRow & Budgeted & { cursor_at: string })[]
      >`${withinBudget(sql, page, "item.bytes", "item.created_at desc, item.id desc", pageBytes)}`;
      return pageOf(rows, limit, toImport, (r) => [r.cursor_at, r.id]);
    },

    /** The import's row held to the commit: one chunk's transaction at a time, whichever worker runs it. */
    async lockMark(id: string): Promise<ImportMark | undefined> {
      const [row] = await sql<{ status: ImportStatus; lines_done: string; errors_kept: number }[]>`
        select status, lines_done::text as lines_done, jsonb_array_length(errors) as errors_kept from imports where id = ${id} for update`;
      return row && { status: row.status, lines_done: Number(row.lines_done), errors_kept: row.errors_kept };
    },

    /** Records a chunk's lines as dealt with; `errors` are only those that still fit. */
    async advance(id: string, o: ChunkOutcome): Promise<void> {
      await sql`
        update imports set status = 'running', lines_done = ${o.linesDone}, bytes_done = ${o.bytesDone},
          created_count = created_count + ${o.created}, failed_count = failed_count + ${o.failed},
          errors = errors || ${jsonb(sql, o.errors)}, updated_at = now()
        where id = ${id}`;
    },

    async finish(id: string, status: "succeeded" | "failed", errors: ImportLineError[] = []): Promise<void> {
      await sql`
        update imports set status = ${status}, completed_at = now(), updated_at = now(),
          errors = case when jsonb_array_length(errors) < ${MAX_IMPORT_ERRORS} then errors || ${jsonb(sql, errors)} else errors end,
          bytes_done = case when ${status} = 'succeeded' then bytes_total else bytes_done end
        where id = ${id} and status in ('queued', 'running')`;
    },

    /** Unfinished imports nobody has moved for a while: their job may have been lost between the commit and its publish. */
    async stalled(idleMs: number, limit: number): Promise<Array<{ id: string; organization_id: string }>> {
      return sql<{ id: string; organization_id: string }[]>`
        select id, organization_id from imports
        where status in ('queued', 'running') and updated_at < now() - ${idleMs} * interval '1 millisecond'
        order by updated_at limit ${limit}`;
    },

    async uncleaned(limit: number): Promise<Cleanable[]> {
      return sql<Cleanable[]>`
        select id, file_key, dry_run from imports where status in ('succeeded', 'failed') and not cleaned order by completed_at limit ${limit}`;
    },

    /**
     * A bounded slice of its bookkeeping rows; true once none is left. Then its ticket goes, or after
     * a dry run is open again for `ticketTtlMs`, and the import is marked clean.
     */
    async cleanSome(i: Cleanable, batch: number, ticketTtlMs: number): Promise<boolean> {
      const tasks = await sql`
        delete from import_tasks where (import_id, source_id) in (select import_id, source_id from import_tasks where import_id = ${i.id} limit ${batch})
        returning 1`;
      const refs = await sql`
        delete from import_refs where (import_id, kind, source_id) in (
          select import_id, kind, source_id from import_refs where import_id = ${i.id} limit ${batch})
        returning 1`;
      if (tasks.length + refs.length > 0) return false;
      if (i.dry_run) {
        await sql`
          update uploads set state = 'received', expires_at = now() + ${ticketTtlMs} * interval '1 millisecond'
          where file_key = ${i.file_key} and purpose = 'import' and state = 'registered'`;
      } else await sql`delete from uploads where file_key = ${i.file_key} and purpose = 'import'`;
      await sql`update imports set cleaned = true where id = ${i.id}`;
      return true;
    },
  };
}
export type ImportsRepo = ReturnType<typeof importsRepo>;
