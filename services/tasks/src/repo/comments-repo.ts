import { type Comment, taskId } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, KEYSET_TIME, keyset, keysetAfter, newId, pageOf, type Sql, withinBudget } from "@tasksvc/db";
import { iso } from "./task-json.js";

interface CommentRow {
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
const COMMENT_PAGES = keyset("asc", ["created_at", "timestamp"], ["id", "text"]);

const toComment = (r: CommentRow): Comment => ({
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
  return {
    async insert(org: string, number: number, c: { author: string; body: string; mentions: readonly string[] }): Promise<Comment> {
      const [row] = await sql<CommentRow[]>`
        insert into comments (id, organization_id, task_number, author_id, body, mention_ids)
        values (${newId("cmt")}, ${org}, ${number}, ${c.author}, ${c.body}, ${[...c.mentions]}::text[])
        returning ${cols}`;
      if (!row) throw new Error("insert returned no row");
      return toComment(row);
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
