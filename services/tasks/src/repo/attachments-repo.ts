import type { Attachment } from "@tasksvc/contracts";
import { KEYSET_TIME, keyset, keysetAfter, pageOf, type Sql } from "@tasksvc/db";

export type UploadState = "open" | "receiving" | "received" | "registered";

export interface UploadRow {
  file_key: string;
  organization_id: string;
  task_number: string;
  file_name: string;
  content_type: string;
  size: string;
  state: UploadState;
  expires_at: Date;
  /** Evaluated by the database in the same statement, so no clock skew between replicas. */
  live: boolean;
}

export interface AttachmentRow {
  id: string;
  organization_id: string;
  task_number: string;
  version_seq: number;
  file_key: string;
  file_name: string;
  content_type: string;
  size: string;
  created_at: Date;
  cursor_at: string;
}

export function toAttachment(r: AttachmentRow): Attachment {
  return { id: r.id, file_name: r.file_name, content_type: r.content_type, size: Number(r.size), created_at: r.created_at.toISOString() };
}

const ATTACHMENT_COLUMNS = `id, organization_id, task_number::text as task_number, version_seq, file_key, file_name, content_type,
  size::text as size, created_at, to_char(created_at at time zone 'UTC', ${KEYSET_TIME}) as cursor_at`;
const ATTACHMENT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
const UPLOAD_COLUMNS = `file_key, organization_id, task_number::text as task_number, file_name, content_type, size::text as size,
  state, expires_at, expires_at > now() as live`;

export function attachmentsRepo(sql: Sql) {
  const att = sql.unsafe(ATTACHMENT_COLUMNS);
  const upl = sql.unsafe(UPLOAD_COLUMNS);
  return {
    async taskVersion(org: string, number: number): Promise<number | undefined> {
      const [row] = await sql<
        { version_count: number }[]
      >`select version_count from tasks where organization_id = ${org} and number = ${number} and deleted_at is null`;
      return row?.version_count;
    },

    /** The row is inserted on first use: a concurrent first insert waits for the other's commit. */
    async lockStorage(org: string): Promise<{ used: number; reserved: number }> {
      const [row] = await sql<{ used: string }[]>`
        insert into storage as s (organization_id, used_bytes) values (${org}, 0)
        on conflict (organization_id) do update set used_bytes = s.used_bytes
        returning used_bytes::text as used`;
      const [res] = await sql<{ reserved: string }[]>`
        select coalesce(sum(size), 0)::text as reserved from uploads
        where organization_id = ${org} and purpose = 'attachment' and state <> 'registered' and expires_at > now()`;
      return { used: Number(row?.used ?? 0), reserved: Number(res?.reserved ?? 0) };
    },

    async usedBytes(org: string): Promise<number> {
      const [row] = await sql<{ used: string }[]>`select used_bytes::text as used from storage where organization_id = ${org}`;
      return Number(row?.used ?? 0);
    },

    async insertUpload(u: { fileKey: string; org: string; task: number; fileName: string; contentType: string; size: number; ttlMs: number }): Promise<Date> {
      const [row] = await sql<{ expires_at: Date }[]>`
        insert into uploads (file_key, organization_id, task_number, file_name, content_type, size, expires_at)
        values (${u.fileKey}, ${u.org}, ${u.task}, ${u.fileName}, ${u.contentType}, ${u.size}, now() + ${u.ttlMs} * interval '1 millisecond')
        returning expires_at`;
      if (!row) throw new Error("insert returned no row");
      return row.expires_at;
    },

    async upload(fileKey: string, lock = false): Promise<UploadRow | undefined> {
      const [row] = await sql<UploadRow[]>`select ${upl} from uploads where file_key = ${fileKey} ${lock ? sql`for update` : sql``}`;
      return row;
    },

    /** One PUT at a time; a claim whose lease ran out (its gateway died mid-upload) may be taken again. */
    async claimUpload(org: string, fileKey: string): Promise<UploadRow | undefined> {
      const [row] = await sql<UploadRow[]>`
        update uploads set state = 'receiving',
          receiving_until = now() + interval '60 seconds' + (size / 1048576.0) * interval '1 second'
        where file_key = ${fileKey} and organization_id = ${org} and expires_at > now()
          and (state = 'open' or (state = 'receiving' and receiving_until < now()))
        returning ${upl}`;
      return row;
    },

    async completeUpload(fileKey: string, org: string | null): Promise<boolean> {
      const rows = await sql`
        update uploads set state = 'received', receiving_until = null
        where file_key = ${fileKey} and state = 'receiving' ${org === null ? sql`` : sql`and organization_id = ${org}`}
        returning 1`;
      return rows.length === 1;
    },

    async releaseUpload(fileKey: string, org: string | null): Promise<boolean> {
      const rows = await sql`
        update uploads set state = 'open', receiving_until = null
        where file_key = ${fileKey} and state = 'receiving' ${org === null ? sql`` : sql`and organization_id = ${org}`}
        returning 1`;
      return rows.length === 1;
    },

    async insertAttachment(a: {
      id: string;
      org: string;
      task: number;
      versionSeq: number;
      fileKey: string;
      fileName: string;
      contentType: string;
      size: number;
    }): Promise<AttachmentRow> {
      const [row] = await sql<AttachmentRow[]>`
        insert into attachments (id, organization_id, task_number, version_seq, file_key, file_name, content_type, size)
        values (${a.id}, ${a.org}, ${a.task}, ${a.versionSeq}, ${a.fileKey}, ${a.fileName}, ${a.contentType}, ${a.size})
        returning ${att}`;
      await sql`update uploads set state = 'registered' where file_key = ${a.fileKey}`;
      await sql`
        insert into storage as s (organization_id, used_bytes) values (${a.org}, ${a.size})
        on conflict (organization_id) do update set used_bytes = s.used_bytes + excluded.used_bytes`;
      if (!row) throw new Error("insert returned no row");
      return row;
    },

    async attachment(org: string, task: number, id: string): Promise<AttachmentRow | undefined> {
      const [row] = await sql<AttachmentRow[]>`select ${att} from attachments where organization_id = ${org} and task_number = ${task} and id = ${id}`;
      return row;
    },

    async attachmentByKey(org: string, id: string, fileKey: string): Promise<AttachmentRow | undefined> {
      const [row] = await sql<AttachmentRow[]>`select ${att} from attachments where organization_id = ${org} and id = ${id} and file_key = ${fileKey}`;
      return row;
    },

    async listAttachments(org: string, task: number, limit: number, after: string | undefined) {
      const rows = await sql<AttachmentRow[]>`
        select ${att} from attachments
        where organization_id = ${org} and task_number = ${task}
          ${keysetAfter(sql, after, ATTACHMENT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toAttachment, (r) => [r.cursor_at, r.id]);
    },

    async deleteAttachment(org: string, task: number, id: string): Promise<AttachmentRow | undefined> {
      const [row] = await sql<AttachmentRow[]>`
        delete from attachments where organization_id = ${org} and task_number = ${task} and id = ${id} returning ${att}`;
      if (!row) return undefined;
      await sql`delete from uploads where file_key = ${row.file_key}`;
      await sql`update storage set used_bytes = used_bytes - ${row.size}::bigint where organization_id = ${org}`;
      return row;
    },

    async trySweepLock(): Promise<boolean> {
      const [row] = await sql<{ ok: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended('tasks.attachments.sweep', 0)) as ok`;
      return row?.ok === true;
    },

    /** A registration holding a ticket's lock makes this wait, then skip it. */
    async deleteExpiredUploads(limit: number): Promise<string[]> {
      const rows = await sql<{ file_key: string }[]>`
        delete from uploads where file_key in (
          select file_key from uploads where state <> 'registered' and expires_at <= now() order by expires_at limit ${limit}
        ) and state <> 'registered' and expires_at <= now()
        returning file_key`;
      return rows.map((r) => r.file_key);
    },

    async knownKeys(keys: string[]): Promise<Set<string>> {
      if (keys.length === 0) return new Set();
      const rows = await sql<{ file_key: string }[]>`
        select file_key from attachments where file_key = any(${keys}::text[])
        union select file_key from uploads where file_key = any(${keys}::text[])`;
      return new Set(rows.map((r) => r.file_key));
    },
  };
}
export type AttachmentsRepo = ReturnType<typeof attachmentsRepo>;
