import { type Comment, taskId } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, newId, pageOf, type Sql, withinBudget } from "@tasksvc/db";
import { EVENT_ENVELOPE } from "./events-repo.js";
import { ISO_SQL } from "./sql-time.js";
import { iso } from "./task-json.js";

export interface CommentRow {
  id: string;
  task_number: string;
  author_id: string;
  body: string;
  mention_ids: string[];
  created_at: Date;
  updated_at: Date;
  edited_at: Date | null;
}

const COLUMNS = "id, task_number, author_id, body, mention_ids, created_at, updated_at, edited_at";
/** What one statement of `create` did: no task, a key another execution holds, or the comment. */
export type CreatedComment = { outcome: "no_task" } | { outcome: "key_taken" } | { outcome: "created"; comment: Comment };

const COMMENT_PAGES = keyset("asc", ["created_at", "timestamp"], ["id", "text"]);

export const toComment = (r: CommentRow): Comment => ({
  id: r.id,
  task_id: taskId(r.task_number),
  author_id: r.author_id,
  body: r.body,
  mention_ids: r.mention_ids,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
  edited_at: r.edited_at === null ? null : iso(r.edited_at),
});

/** A task's comments; the task's own row is never touched, so a comment is no content change. */
export function commentsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(COLUMNS);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  const envelope = sql.unsafe(EVENT_ENVELOPE);
  const isoFormat = sql.unsafe(ISO_SQL);
  return {
    /**
     * The whole create in one statement, so one round trip (decision 0037): the comment, its
     * author's and mentioned users' follows, its event and its Idempotency-Key record. The key goes
     * first and the rest only when it went in, so a key recorded by another execution (one still in
     * flight is waited for) writes nothing. The foreign key to the task holds it to the end.
     */
    async create(
      org: string,
      number: number,
      c: { author: string; body: string; mentions: readonly string[]; credentialId: string; key: string | undefined },
    ): Promise<CreatedComment> {
      const follows = [{ user: c.author, reason: "commenter" }, ...c.mentions.filter((m) => m !== c.author).map((user) => ({ user, reason: "mentioned" }))];
      const [row] = await sql<(CommentRow & { task_found: boolean; key_taken: boolean })[]>`
        with v as (
          select ${newId("cmt")}::text as id, ${newId("evt")}::text as event_id, t.organization_id, t.number as task_number,
            ${c.author}::text as author_id, ${c.body}::text as body, ${[...c.mentions]}::text[] as mention_ids, now() as at
          from tasks t where t.organization_id = ${org} and t.number = ${number} and t.deleted_at is null
        ), j as (
          select v.*, jsonb_build_object('id', v.id, 'task_id', ${taskId(number)}::text, 'author_id', v.author_id, 'body', v.body,
            'mention_ids', to_jsonb(v.mention_ids), 'created_at', to_char(v.at at time zone 'UTC', ${isoFormat}),
            'updated_at', to_char(v.at at time zone 'UTC', ${isoFormat}), 'edited_at', null) as data
          from v
        ), k as (
          insert into idempotency as i (credential_id, key, operation, result, organization_id)
          select ${c.credentialId}, ${c.key ?? null}::text, 'createComment', j.data, j.organization_id from j where ${c.key ?? null}::text is not null
          on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now(),
            organization_id = excluded.organization_id
            where i.created_at <= now() - interval '24 hours'
          returning 1
        ), w as (
          select j.* from j where ${c.key ?? null}::text is null or exists (select 1 from k)
        ), made as (
          insert into comments (id, organization_id, task_number, author_id, body, mention_ids, created_at, updated_at)
          select id, organization_id, task_number, author_id, body, mention_ids, at, at from w
          returning ${cols}
        ), followed as (
          insert into task_followers (organization_id, task_number, user_id, reason)
          select w.organization_id, w.task_number, f.user_id, f.reason
          from w, unnest(${follows.map((f) => f.user)}::text[], ${follows.map((f) => f.reason)}::text[]) as f(user_id, reason)
          order by f.user_id
          on conflict (organization_id, task_number, user_id) do nothing
        ), evented as (
          insert into outbox (event_id, type, organization_id, payload)
          select event_id, type, organization_id, ${envelope}
          from (select w.event_id, 'comment.created'::text as type, w.organization_id, w.author_id as actor_id, w.data, null::jsonb as changes from w) e
        )
        select made.*, exists (select 1 from v) as task_found, not exists (select 1 from w) as key_taken
        from (select 1) one left join made on true`;
      if (!row?.task_found) return { outcome: "no_task" };
      if (row.key_taken) return { outcome: "key_taken" };
      return { outcome: "created", comment: toComment(row) };
    },

    /** `lock`: held to the transaction's end, so an edit and a delete of one comment take turns. */
    async get(org: string, number: number, id: string, lock = false): Promise<Comment | undefined> {
      const [row] = await sql<CommentRow[]>`
        select ${cols} from comments where organization_id = ${org} and task_number = ${number} and id = ${id}
        ${lock ? sql`for update` : sql``}`;
      return row && toComment(row);
    },

    /**
     * Oldest first, ties by id. A body may hold 20,000 characters, so pages stop at the byte budget
     * too; a task may have any number of comments, and each page reads only its own rows (keyset).
     */
    async list(org: string, number: number, limit: number, after: string | undefined) {
      const page = sql`
        select ${cols}, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at, created_at as sort_at,
          octet_length(row_to_json(comments)::text) as bytes
        from comments
        where organization_id = ${org} and task_number = ${number}
          ${keysetAfter(sql, after, COMMENT_PAGES)}
        order by created_at, id
        limit ${limit + 1}`;
      const rows = await sql<(CommentRow & Budgeted & { cursor_at: string })[]>`${withinBudget(sql, page, "item.bytes", "item.sort_at, item.id", pageBytes)}`;
      return pageOf(rows, limit, toComment, (r) => [r.cursor_at, r.id]);
    },

    async update(org: string, number: number, id: string, c: { body: string; mentions: readonly string[] }): Promise<Comment | undefined> {
      const [row] = await sql<CommentRow[]>`
        update comments set body = ${c.body}, mention_ids = ${[...c.mentions]}::text[], updated_at = now(), edited_at = now()
        where organization_id = ${org} and task_number = ${number} and id = ${id}
        returning ${cols}`;
      return row && toComment(row);
    },

    /** True when the task had it. */
    async remove(org: string, number: number, id: string): Promise<boolean> {
      const rows = await sql`delete from comments where organization_id = ${org} and task_number = ${number} and id = ${id} returning 1`;
      return rows.length === 1;
    },
  };
}
export type CommentsRepo = ReturnType<typeof commentsRepo>;
