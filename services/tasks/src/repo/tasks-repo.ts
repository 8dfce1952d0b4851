import type { TaskStatus, TaskSummary, TaskVersion } from "@tasksvc/contracts";
import { taskId } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, jsonb, keyset, keysetAfter, pageOf, plannedEachRun, type Sql, withinBudget } from "@tasksvc/db";
import { createTasks, type NewTask } from "./task-create.js";
import { type Content, type ContentColumns, iso, shownVersion, TASK_COLUMNS, type TaskRow } from "./task-json.js";
import { type ActorColumns, actorOfRow, stampColumns, type VersionStamp } from "./version-stamp.js";

type SummaryRow = {
  number: string;
  title: string;
  status: TaskStatus;
  archived: boolean;
  owner_user_id: string;
  assignee_ids: string[];
  parent_number: string | null;
};

const toSummary = (r: SummaryRow): TaskSummary => ({
  task_id: taskId(r.number),
  title: r.title,
  status: r.status,
  archived: r.archived,
  owner_user_id: r.owner_user_id,
  assignee_ids: r.assignee_ids,
  parent_task_id: r.parent_number === null ? null : taskId(r.parent_number),
});

const VERSION_PAGES = keyset("desc", ["seq", "integer"]);

/** A label, a custom field (by key) or one of its options, as removals name them. */
export type Carried = { kind: "label"; ref: string } | { kind: "field"; key: string } | { kind: "option"; key: string; ref: string };
export type CarryingRow = TaskRow & { stored_label_ids: string[]; stored_custom_fields: ContentColumns["custom_fields"] };

/** On the stored columns, each form one the GIN indexes serve (`@>`, `?`). */
function carries(sql: Sql, what: Carried) {
  switch (what.kind) {
    case "label":
      return sql`label_ids @> array[${what.ref}]::text[]`;
    case "field":
      return sql`custom_fields ? ${what.key}`;
    case "option":
      return sql`(custom_fields @> jsonb_build_object(${what.key}::text, ${what.ref}::text)
        or custom_fields @> jsonb_build_object(${what.key}::text, jsonb_build_array(${what.ref}::text)))`;
  }
}

export function tasksRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const cols = sql.unsafe(TASK_COLUMNS);
  return {
    /**
     * `for no key update`, the lock an UPDATE of non-key columns takes anyway: it does not conflict
     * with foreign-key checks' key-share locks, so a PATCH never waits for a subtask pointing at it.
     */
    async get(org: string, number: number, lock = false): Promise<TaskRow | undefined> {
      const [row] = await sql<TaskRow[]>`
        select ${cols} from tasks where organization_id = ${org} and number = ${number} and deleted_at is null
        ${lock ? sql`for no key update` : sql``}`;
      return row;
    },

    /** The row's `xmin`: every UPDATE writes a new tuple, so any change moves it, and a row lock does not (decision 0017). */
    async rowVersion(org: string, number: number): Promise<string | undefined> {
      const [row] = await sql<{ v: string }[]>`select xmin::text as v from tasks where organization_id = ${org} and number = ${number} and deleted_at is null`;
      return row?.v;
    },

    async getForCache(org: string, number: number): Promise<(TaskRow & { row_version: string }) | undefined> {
      const [row] = await sql<(TaskRow & { row_version: string })[]>`
        select ${cols}, xmin::text as row_version from tasks where organization_id = ${org} and number = ${number} and deleted_at is null`;
      return row;
    },

    async exists(org: string, number: number): Promise<boolean> {
      const rows = await sql`select 1 from tasks where organization_id = ${org} and number = ${number} and deleted_at is null`;
      return rows.length === 1;
    },

    create: (org: string, items: NewTask[]): Promise<TaskRow[]> => createTasks(sql, org, items),

    async updateContent(org: string, number: number, c: Content, versionId: string, projectsChanged: boolean, by: VersionStamp): Promise<TaskRow> {
      const s = stampColumns(by);
      const [row] = await sql<TaskRow[]>`
        with t as (
          update tasks set parent_number = ${c.parent_number}, current_version_id = ${versionId}, version_count = version_count + 1,
            version = version + 1,
            title = ${c.title}, description = ${c.description}, status = ${c.status}, priority = ${c.priority},
            start_date = ${c.start_date}::timestamptz, due_date = ${c.due_date}::timestamptz, notes = ${c.notes}, story_points = ${c.story_points},
            recurrence = ${c.recurrence === null ? null : jsonb(sql, c.recurrence)}, project_ids = ${c.project_ids}::text[],
            assignee_ids = ${c.assignee_ids}::text[], label_ids = ${c.label_ids}::text[],
            custom_fields = ${jsonb(sql, c.custom_fields)},
            updated_at = greatest(now(), updated_at + interval '1 microsecond')
          where organization_id = ${org} and number = ${number}
          returning *
        ), v as (
          insert into task_versions (id, organization_id, task_number, seq, version, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
            actor_type, actor_id, actor_user_id, request_id, batch_key)
          select ${versionId}, organization_id, number, version_count, version, title, description, status, priority, start_date, due_date, notes,
            story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, updated_at,
            ${s.actor_type}::text, ${s.actor_id}::text, ${s.actor_user_id}::text, ${s.request_id}::text, ${s.batch_key}::text from t
        ), f as (
          insert into task_followers (organization_id, task_number, user_id, reason)
          select organization_id, number, unnest(assignee_ids), 'assignee' from t
          on conflict do nothing
        )
        select ${cols} from t`;
      if (projectsChanged) {
        await sql`delete from task_projects where organization_id = ${org} and task_number = ${number} and project_id <> all(${c.project_ids}::text[])`;
        await sql`
          insert into task_projects (organization_id, task_number, project_id)
          select ${org}, ${number}, unnest(${c.project_ids}::text[]) on conflict do nothing`;
      }
      if (!row) throw new Error("update returned no row");
      return row;
    },

    async setArchived(org: string, number: number, archived: boolean): Promise<TaskRow | undefined> {
      const [row] = await sql<TaskRow[]>`
        update tasks set archived = ${archived}, archived_at = ${archived ? sql`now()` : null}, version = version + 1
        where organization_id = ${org} and number = ${number} and archived <> ${archived}
        returning ${cols}`;
      return row;
    },

    async history(org: string, number: number, limit: number, after: string | undefined) {
      // A version's size: its whole row as JSON, escaped as the answer escapes it, a few bytes more.
      const page = sql`
        select id, seq, version, title, description, status, priority, start_date, due_date, notes,
          story_points::text as story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
          actor_type, actor_id, actor_user_id, octet_length(row_to_json(task_versions)::text) as bytes
        from task_versions
        where organization_id = ${org} and task_number = ${number}
          ${keysetAfter(sql, after, VERSION_PAGES)}
        order by seq desc
        limit ${limit + 1}`;
      const [owner] = await sql<{ owner_user_id: string }[]>`select owner_user_id from tasks where organization_id = ${org} and number = ${number}`;
      const rows = await sql<(ContentColumns & ActorColumns & Budgeted & { id: string; seq: number; version: number; created_at: Date })[]>`${withinBudget(
        sql,
        page,
        "item.bytes",
        "item.seq desc",
        pageBytes,
      )}`;
      return pageOf(
        rows,
        limit,
        (r): TaskVersion => ({
          id: r.id,
          version: r.version,
          ...shownVersion({ ...r, owner_user_id: owner?.owner_user_id ?? "" }),
          created_at: iso(r.created_at),
          actor: actorOfRow(r),
        }),
        (r) => [r.seq],
      );
    },

    async isSelfOrDescendant(org: string, number: number, candidate: number): Promise<boolean> {
      const rows = await sql`
        with recursive up(n) as (
          select ${candidate}::bigint
          union
          select t.parent_number from tasks t join up on t.organization_id = ${org} and t.number = up.n where t.parent_number is not null
        )
        select 1 from up where n = ${number} limit 1`;
      return rows.length === 1;
    },

    async summaries(org: string, numbers: number[]): Promise<TaskSummary[]> {
      if (numbers.length === 0) return [];
      const rows = await sql<SummaryRow[]>`
        select number, title, status, archived, owner_user_id, assignee_ids, parent_number from tasks
        where organization_id = ${org} and number = any(${numbers}::bigint[]) and deleted_at is null`;
      return rows.map(toSummary);
    },

    async subtaskSummaries(org: string, parent: number, only: { owner?: string | undefined; limit?: number | undefined } = {}): Promise<TaskSummary[]> {
      // The subtasks the user may plan: owned or assigned.
      const owned =
        only.owner === undefined ? sql`` : sql`and (owner_user_id = ${only.owner} or assignee_ids @> array[${only.owner}]::text[]) and not archived`;
      const rows = await sql<SummaryRow[]>`
        select number, title, status, archived, owner_user_id, assignee_ids, parent_number from tasks
        where organization_id = ${org} and parent_number = ${parent} and deleted_at is null ${owned} order by tasks.number
        ${only.limit === undefined ? sql`` : sql`limit ${only.limit}`}`;
      return rows.map(toSummary);
    },

    async byNumber(org: string, numbers: number[]): Promise<TaskRow[]> {
      if (numbers.length === 0) return [];
      return sql<TaskRow[]>`select ${cols} from tasks where organization_id = ${org} and number = any(${numbers}::bigint[]) and deleted_at is null`;
    },

    /**
     * Tasks that still carry something being removed, locked; those a writer holds are left for a
     * later batch. Planned at each run: a label on half the tasks is best found by walking them in
     * order, a rare one by its index, and a generic plan would guess one share for both. In ORDER BY,
     * `number` alone is the text output column: sorted as text, every batch read and sorted all the
     * tasks that carry it, where the table's number walks the organization's key.
     */
    async carrying(org: string, what: Carried, limit: number): Promise<CarryingRow[]> {
      return plannedEachRun(sql<CarryingRow[]>`
        select ${cols}, label_ids as stored_label_ids, custom_fields as stored_custom_fields from tasks
        where organization_id = ${org} and ${carries(sql, what)}
        order by tasks.number limit ${limit}
        for no key update skip locked`);
    },

    async anyCarrying(org: string, what: Carried): Promise<boolean> {
      const [row] = await sql<{ any: boolean }[]>`select exists (select 1 from tasks where organization_id = ${org} and ${carries(sql, what)}) as any`;
      return row?.any === true;
    },

    /** The acyclicity check reads the parent graph, so parent changes are serialized; held to the commit. */
    async lockHierarchy(org: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.hierarchy:${org}`}, 0))`;
    },
  };
}
export type TasksRepo = ReturnType<typeof tasksRepo>;
