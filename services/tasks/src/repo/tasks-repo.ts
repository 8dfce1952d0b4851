import type { DependencyView, Event, Project, Recurrence, Task, TaskEventType, TaskStatus, TaskSummary, TaskVersion } from "@tasksvc/contracts";
import { EVENT_RETENTION_DAYS, RawJson, taskId } from "@tasksvc/contracts";
import {
  decodeKeyset,
  deleteInBatches,
  idempotencyRecords,
  KeyRecordedMeanwhile,
  mapPgError,
  newId,
  pageOf,
  PG,
  rawPageOf,
  type PgErrorRule,
  type Sql,
} from "@tasksvc/db";

/**
 * A keyset position's time as text, to the microsecond the column holds (milliseconds would make
 * rows of one millisecond skip or repeat across pages); read back with `::timestamp at time zone 'UTC'`.
 */
const KEYSET_TIME = `'YYYY-MM-DD"T"HH24:MI:SS.US'`;

/** The columns every task read selects; bigint and numeric come back as text, dates as text. */
const TASK_COLUMNS = `number::text as number, owner_user_id, parent_number::text as parent_number, archived,
  current_version_id, version_count, title, description, status, priority, start_date,
  due_date::text as due_date, notes, story_points::text as story_points, recurrence, project_ids,
  series_head::text as series_head, series_slot::text as series_slot, created_at, updated_at, to_char(updated_at at time zone 'UTC', ${KEYSET_TIME}) as cursor_at`;

/** The columns a task row and a version row share, as the API shows them. */
interface ContentColumns {
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: Task["priority"];
  start_date: Date | null;
  due_date: string | null;
  notes: string | null;
  story_points: string | null;
  project_ids: string[];
  recurrence: Recurrence | null;
}

export interface TaskRow extends ContentColumns {
  number: string;
  owner_user_id: string;
  parent_number: string | null;
  archived: boolean;
  current_version_id: string;
  version_count: number;
  /** The series an occurrence was made from, and its slot (migration 0007); null on other tasks. */
  series_head: string | null;
  series_slot: string | null;
  created_at: Date;
  updated_at: Date;
  cursor_at: string;
}

/** A version's content: what PATCH compares and what history shows. */
export interface Content {
  title: string;
  description: string | null;
  status: TaskStatus;
  priority: Task["priority"];
  start_date: string | null;
  due_date: string | null;
  notes: string | null;
  story_points: number | null;
  recurrence: Recurrence | null;
  project_ids: string[];
  parent_number: number | null;
}

const iso = (d: Date) => d.toISOString();
const dayToIso = (d: string | null) => (d === null ? null : `${d}T00:00:00.000Z`);

function shownContent(r: ContentColumns) {
  return {
    title: r.title,
    description: r.description,
    status: r.status,
    priority: r.priority,
    start_date: r.start_date ? iso(r.start_date) : null,
    due_date: dayToIso(r.due_date),
    notes: r.notes,
    story_points: r.story_points === null ? null : Number(r.story_points),
    project_ids: r.project_ids,
    recurrence: r.recurrence,
  };
}

export function toTask(r: TaskRow): Task {
  return {
    id: taskId(r.number),
    ...shownContent(r),
    parent_task_id: r.parent_number === null ? null : taskId(r.parent_number),
    archived: r.archived,
    series_task_id: r.series_head === null ? null : taskId(r.series_head),
    occurrence_date: r.series_slot,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
  };
}

export function contentOf(r: TaskRow): Content {
  return {
    title: r.title,
    description: r.description,
    status: r.status,
    priority: r.priority,
    start_date: r.start_date ? iso(r.start_date) : null,
    due_date: r.due_date,
    notes: r.notes,
    story_points: r.story_points === null ? null : Number(r.story_points),
    recurrence: r.recurrence,
    project_ids: r.project_ids,
    parent_number: r.parent_number === null ? null : Number(r.parent_number),
  };
}

/** An occurrence's place in its series (the scheduler's creates): head task number and slot day. */
export interface SeriesLink {
  head: number;
  slot: string;
}

/** A task's API shape before it has a number and timestamps (toTask decides every other field). */
export function taskTemplate(owner: string, c: Content, series: SeriesLink | null = null): Omit<Task, "id" | "created_at" | "updated_at"> {
  const epoch = new Date(0);
  const {
    id: _id,
    created_at: _c,
    updated_at: _u,
    ...rest
  } = toTask({
    number: "0",
    owner_user_id: owner,
    parent_number: c.parent_number === null ? null : String(c.parent_number),
    archived: false,
    current_version_id: "",
    version_count: 1,
    series_head: series === null ? null : String(series.head),
    series_slot: series === null ? null : series.slot,
    title: c.title,
    description: c.description,
    status: c.status,
    priority: c.priority,
    start_date: c.start_date === null ? null : new Date(c.start_date),
    due_date: c.due_date,
    notes: c.notes,
    story_points: c.story_points === null ? null : String(c.story_points),
    recurrence: c.recurrence,
    project_ids: c.project_ids,
    created_at: epoch,
    updated_at: epoch,
    cursor_at: "",
  });
  return rest;
}

/** Postgres' rendering of a timestamptz as Date#toISOString() renders it (milliseconds, Z). */
const ISO_SQL = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`;

/** A stored event as the feed shows it: the webhook body (`type`, `timestamp`, `data`) and its id. */
const EVENT_JSON = `json_build_object('id', id, 'type', type, 'timestamp', payload->'created_at', 'data', payload->'data')::text`;

/**
 * A task row's API shape as JSON text, built by Postgres exactly as toTask() builds it from the
 * same row (test/task-json.test.ts holds the two equal, field by field): a list sends these bytes
 * on, to the gateway and from there to HTTP, without any process parsing them (decision 0020).
 */
const TASK_JSON = `json_build_object('id', 'T-' || number, 'title', title, 'description', description, 'status', status,
  'priority', priority, 'start_date', to_char(start_date at time zone 'UTC', ${ISO_SQL}),
  'due_date', due_date::text || 'T00:00:00.000Z', 'notes', notes, 'story_points', story_points, 'project_ids', project_ids,
  'recurrence', recurrence, 'parent_task_id', 'T-' || parent_number, 'archived', archived,
  'series_task_id', 'T-' || series_head, 'occurrence_date', series_slot::text,
  'created_at', to_char(created_at at time zone 'UTC', ${ISO_SQL}), 'updated_at', to_char(updated_at at time zone 'UTC', ${ISO_SQL}))::text`;

const toSummary = (r: {
  number: string;
  title: string;
  status: TaskStatus;
  archived: boolean;
  owner_user_id: string;
  parent_number: string | null;
}): TaskSummary => ({
  task_id: taskId(r.number),
  title: r.title,
  status: r.status,
  archived: r.archived,
  owner_user_id: r.owner_user_id,
  parent_task_id: r.parent_number === null ? null : taskId(r.parent_number),
});

interface ProjectRow {
  id: string;
  name: string;
  description: string | null;
  created_at: Date;
  updated_at: Date;
  cursor_at: string;
}
const toProject = (r: ProjectRow): Project => ({
  id: r.id,
  name: r.name,
  description: r.description,
  created_at: iso(r.created_at),
  updated_at: iso(r.updated_at),
});

/** Another project of the organization has this name (projects_name_key). */
export class ProjectNameTaken extends Error {
  constructor() {
    super("another project of the organization has this name");
    this.name = "ProjectNameTaken";
  }
}

/** A project or parent task that a create named was gone when its statement ran. */
export class ReferenceVanished extends Error {
  constructor(readonly what: "project" | "parent") {
    super(`the ${what} named by the create no longer exists`);
    this.name = "ReferenceVanished";
  }
}

const PROJECT_RULES: readonly PgErrorRule[] = [{ code: PG.uniqueViolation, constraint: "projects_name_key", to: () => new ProjectNameTaken() }];

/**
 * What createTasks' statement can violate: the idempotency key (a twin recorded it first; the
 * insert waited for its commit) and the two references the domain checked before it. The other
 * foreign keys point at rows the statement inserts itself.
 */
const CREATE_RULES: readonly PgErrorRule[] = [
  { code: PG.uniqueViolation, constraint: "idempotency_pkey", to: () => new KeyRecordedMeanwhile() },
  { code: PG.foreignKeyViolation, constraint: "task_projects_project_id_fkey", to: () => new ReferenceVanished("project") },
  { code: PG.foreignKeyViolation, constraint: "tasks_organization_id_parent_number_fkey", to: () => new ReferenceVanished("parent") },
];

/** All SQL of the tasks service (schema `tasks`). Bound to a pool or to one transaction. */
export function tasksRepo(sql: Sql) {
  const cols = sql.unsafe(TASK_COLUMNS);
  const taskJson = sql.unsafe(TASK_JSON);
  const eventJson = sql.unsafe(EVENT_JSON);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  const idempotency = idempotencyRecords(sql);
  return {
    /**
     * One task; with `lock`, the row is held until the transaction ends. `for no key update`, the
     * lock an UPDATE of non-key columns takes anyway: it does not conflict with the key-share
     * locks that foreign-key checks take, so a PATCH of a task never waits for (or deadlocks
     * with) a transaction that merely points a subtask or a dependency at it.
     */
    async task(org: string, number: number, lock = false): Promise<TaskRow | undefined> {
      const [row] = await sql<TaskRow[]>`
        select ${cols} from tasks where organization_id = ${org} and number = ${number}
        ${lock ? sql`for no key update` : sql``}`;
      return row;
    },

    /**
     * The version of a task's row for the read cache (decision 0017): its `xmin`, the transaction
     * that wrote the row's current tuple. Every UPDATE of the row writes a new tuple, so any change
     * (content, archive, unlinked project) changes it; a row lock does not. A primary-key lookup
     * that returns one small value. Undefined when there is no such task.
     */
    async rowVersion(org: string, number: number): Promise<string | undefined> {
      const [row] = await sql<{ v: string }[]>`select xmin::text as v from tasks where organization_id = ${org} and number = ${number}`;
      return row?.v;
    },

    /** One task with its row version (rowVersion), read together, for the read cache. */
    async taskForCache(org: string, number: number): Promise<(TaskRow & { row_version: string }) | undefined> {
      const [row] = await sql<(TaskRow & { row_version: string })[]>`
        select ${cols}, xmin::text as row_version from tasks where organization_id = ${org} and number = ${number}`;
      return row;
    },

    async taskExists(org: string, number: number): Promise<boolean> {
      const rows = await sql`select 1 from tasks where organization_id = ${org} and number = ${number}`;
      return rows.length === 1;
    },

    /**
     * Creates several tasks of one organization in ONE statement, so in one implicit transaction
     * and one round trip: takes k numbers from the organization's counter (its row stays locked
     * to the commit), inserts the tasks, their first versions, project links, the task.created
     * outbox rows and the idempotency records. The events and records carry the API shape:
     * `template` (from toTask) completed here with the number and the database's timestamps.
     * Nothing is written when it throws KeyRecordedMeanwhile (the key was recorded meanwhile) or
     * ReferenceVanished (a project or parent was deleted since the domain's checks).
     */
    async createTasks(
      org: string,
      items: Array<{
        owner: string;
        content: Content;
        versionId: string;
        eventId: string;
        credentialId: string | null;
        key: string | null;
        /** The create's own trace, for its outbox row (creates of several traces share the statement). */
        traceparent?: string | null;
        /** Set by the recurrence scheduler only: the occurrence's series and slot. */
        series?: SeriesLink | null;
      }>,
    ): Promise<TaskRow[]> {
      const input = items.map((it, i) => ({
        ord: i + 1,
        owner_user_id: it.owner,
        version_id: it.versionId,
        event_id: it.eventId,
        credential_id: it.credentialId,
        key: it.key,
        traceparent: it.traceparent ?? null,
        template: taskTemplate(it.owner, it.content, it.series ?? null),
        series_head: it.series?.head ?? null,
        series_slot: it.series?.slot ?? null,
        parent_number: it.content.parent_number,
        title: it.content.title,
        description: it.content.description,
        status: it.content.status,
        priority: it.content.priority,
        start_date: it.content.start_date,
        due_date: it.content.due_date,
        notes: it.content.notes,
        story_points: it.content.story_points,
        recurrence: it.content.recurrence,
        project_ids: it.content.project_ids,
      }));
      const iso = sql.unsafe(ISO_SQL);
      return sql<TaskRow[]>`
        with c as (
          insert into org_counters as c (organization_id, last_number) values (${org}, ${items.length})
          on conflict (organization_id) do update set last_number = c.last_number + ${items.length}
          returning last_number
        ), x as (
          select c.last_number - ${items.length} + i.ord as number, i.*
          from c, jsonb_to_recordset(${sql.json(input as never)}) as i(ord int, owner_user_id text, version_id text, event_id text,
            credential_id text, key text, traceparent text, template jsonb, parent_number bigint, title text, description text, status text,
            priority text, start_date timestamptz, due_date date, notes text, story_points numeric, recurrence jsonb, project_ids jsonb,
            series_head bigint, series_slot date)
        ), t as (
          insert into tasks (organization_id, number, owner_user_id, parent_number, current_version_id, version_count,
            title, description, status, priority, start_date, due_date, notes, story_points, recurrence, project_ids,
            series_head, series_slot, created_at, updated_at)
          select ${org}, number, owner_user_id, parent_number, version_id, 1, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, array(select jsonb_array_elements_text(project_ids)), series_head, series_slot,
            now(), now()
          from x
          returning *
        ), v as (
          insert into task_versions (id, organization_id, task_number, seq, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, project_ids, created_at)
          select current_version_id, organization_id, number, 1, title, description, status, priority, start_date, due_date,
            notes, story_points, recurrence, project_ids, created_at from t
        ), p as (
          insert into task_projects (organization_id, task_number, project_id)
          select organization_id, number, unnest(project_ids) from t
        ), api as (
          select x.event_id, x.credential_id, x.key, x.traceparent, t.number,
            x.template || jsonb_build_object('id', 'T-' || t.number, 'created_at', to_char(t.created_at at time zone 'UTC', ${iso}),
              'updated_at', to_char(t.updated_at at time zone 'UTC', ${iso})) as task
          from t join x on x.number = t.number
        ), o as (
          insert into outbox (event_id, type, organization_id, payload, traceparent)
          select event_id, 'task.created', ${org}::text, jsonb_build_object('id', event_id, 'type', 'task.created', 'organization_id', ${org}::text,
            'created_at', to_char(now() at time zone 'UTC', ${iso}), 'data', task), traceparent
          from api order by number
        ), r as (
          insert into idempotency (credential_id, key, operation, result)
          select credential_id, key, 'createTask', task from api where key is not null
        )
        select ${cols} from t order by t.number`.catch((e: unknown) => mapPgError(e, CREATE_RULES));
    },

    /** Writes a new current version (content changed). */
    async updateContent(org: string, number: number, c: Content, versionId: string, projectsChanged: boolean): Promise<TaskRow> {
      const [row] = await sql<TaskRow[]>`
        with t as (
          update tasks set parent_number = ${c.parent_number}, current_version_id = ${versionId}, version_count = version_count + 1,
            title = ${c.title}, description = ${c.description}, status = ${c.status}, priority = ${c.priority},
            start_date = ${c.start_date}::timestamptz, due_date = ${c.due_date}::date, notes = ${c.notes}, story_points = ${c.story_points},
            recurrence = ${c.recurrence === null ? null : sql.json(c.recurrence as never)}, project_ids = ${c.project_ids}::text[],
            updated_at = greatest(now(), updated_at + interval '1 microsecond')
          where organization_id = ${org} and number = ${number}
          returning *
        ), v as (
          insert into task_versions (id, organization_id, task_number, seq, title, description, status, priority, start_date,
            due_date, notes, story_points, recurrence, project_ids, created_at)
          select ${versionId}, organization_id, number, version_count, title, description, status, priority, start_date, due_date, notes,
            story_points, recurrence, project_ids, updated_at from t
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
        update tasks set archived = ${archived}, archived_at = ${archived ? sql`now()` : null}
        where organization_id = ${org} and number = ${number} and archived <> ${archived}
        returning ${cols}`;
      return row;
    },

    async listTasks(
      org: string,
      q: {
        limit: number;
        after?: string | undefined;
        status?: TaskStatus | undefined;
        project_id?: string | undefined;
        parent?: number | undefined;
        series?: number | undefined;
        archived: boolean;
      },
    ) {
      const [at, n] = q.after ? decodeKeyset(q.after, 2) : [null, null];
      const rows = await sql<{ json: string; cursor_at: string; number: string }[]>`
        select ${taskJson} as json, to_char(updated_at at time zone 'UTC', ${keysetTime}) as cursor_at, number::text as number
        from tasks
        where organization_id = ${org} and archived = ${q.archived}
          ${q.status === undefined ? sql`` : sql`and status = ${q.status}`}
          ${q.parent === undefined ? sql`` : sql`and parent_number = ${q.parent}`}
          ${q.series === undefined ? sql`` : sql`and series_head = ${q.series}`}
          ${q.project_id === undefined ? sql`` : sql`and project_ids @> array[${q.project_id}]::text[]`}
          ${at === null ? sql`` : sql`and (updated_at, number) < (${String(at)}::text::timestamp at time zone 'UTC', ${String(n)}::bigint)`}
        order by tasks.updated_at desc, tasks.number desc
        limit ${q.limit + 1}`;
      return rawPageOf<Task, (typeof rows)[number]>(rows, q.limit, (r) => [r.cursor_at, r.number]);
    },

    async history(org: string, number: number, limit: number, after: string | undefined) {
      const [seq] = after ? decodeKeyset(after, 1) : [null];
      const rows = await sql<(ContentColumns & { id: string; seq: number; created_at: Date })[]>`
        select id, seq, title, description, status, priority, start_date, due_date::text as due_date, notes,
          story_points::text as story_points, recurrence, project_ids, created_at
        from task_versions
        where organization_id = ${org} and task_number = ${number}
          ${seq === null ? sql`` : sql`and seq < ${Number(seq)}`}
        order by seq desc
        limit ${limit + 1}`;
      return pageOf(
        rows,
        limit,
        (r): TaskVersion => ({ id: r.id, ...shownContent(r), created_at: iso(r.created_at) }),
        (r) => [r.seq],
      );
    },

    /** Whether `candidate` is `number` itself or one of its ancestors' descendants (parent loop). */
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

    /** Summaries of several tasks of one organization, in one query (unknown numbers are absent). */
    async summaries(org: string, numbers: number[]): Promise<TaskSummary[]> {
      if (numbers.length === 0) return [];
      const rows = await sql<{ number: string; title: string; status: TaskStatus; archived: boolean; owner_user_id: string; parent_number: string | null }[]>`
        select number, title, status, archived, owner_user_id, parent_number from tasks
        where organization_id = ${org} and number = any(${numbers}::bigint[])`;
      return rows.map(toSummary);
    },

    async subtaskSummaries(org: string, parent: number): Promise<TaskSummary[]> {
      const rows = await sql<{ number: string; title: string; status: TaskStatus; archived: boolean; owner_user_id: string; parent_number: string | null }[]>`
        select number, title, status, archived, owner_user_id, parent_number from tasks
        where organization_id = ${org} and parent_number = ${parent} order by tasks.number`;
      return rows.map(toSummary);
    },

    // -- dependencies -----------------------------------------------------------------------

    /**
     * Serializes the writes of one organization's graph, parents ("hierarchy", see updateTask) or
     * dependencies, whose acyclicity checks read the graph; held to the commit.
     */
    async lockGraph(org: string, graph: "hierarchy" | "dependencies"): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`tasks.${graph}:${org}`}, 0))`;
    },

    /** True when `from` is already blocked, directly or transitively, by `target`. */
    async isBlockedBy(org: string, from: number, target: number): Promise<boolean> {
      const rows = await sql`
        with recursive chain(n) as (
          select ${from}::bigint
          union
          select d.blocker_number from dependencies d join chain on d.organization_id = ${org} and d.blocked_number = chain.n
        )
        select 1 from chain where n = ${target} limit 1`;
      return rows.length === 1;
    },

    async insertDependency(org: string, blocked: number, blocker: number): Promise<boolean> {
      const rows = await sql`
        insert into dependencies (organization_id, blocked_number, blocker_number) values (${org}, ${blocked}, ${blocker})
        on conflict do nothing returning 1`;
      return rows.length === 1;
    },

    async deleteDependency(org: string, blocked: number, blocker: number): Promise<boolean> {
      const rows = await sql`
        delete from dependencies where organization_id = ${org} and blocked_number = ${blocked} and blocker_number = ${blocker} returning 1`;
      return rows.length === 1;
    },

    async dependencyView(org: string, number: number): Promise<DependencyView> {
      const rows = await sql<{ side: "blocked_by" | "blocking"; number: string; title: string; status: TaskStatus }[]>`
        select 'blocked_by' as side, t.number, t.title, t.status, d.created_at
        from dependencies d join tasks t on t.organization_id = d.organization_id and t.number = d.blocker_number
        where d.organization_id = ${org} and d.blocked_number = ${number}
        union all
        select 'blocking', t.number, t.title, t.status, d.created_at
        from dependencies d join tasks t on t.organization_id = d.organization_id and t.number = d.blocked_number
        where d.organization_id = ${org} and d.blocker_number = ${number}
        order by created_at, number`;
      const item = (r: (typeof rows)[number]) => ({ task_id: taskId(r.number), title: r.title, status: r.status, open: r.status !== "COMPLETED" });
      const blockedBy = rows.filter((r) => r.side === "blocked_by").map(item);
      const blocking = rows.filter((r) => r.side === "blocking").map(item);
      return {
        task_id: taskId(number),
        is_blocked: blockedBy.some((b) => b.open),
        blocked_by_count: blockedBy.length,
        blocking_count: blocking.length,
        blocked_by: blockedBy,
        blocking,
      };
    },

    // -- projects ---------------------------------------------------------------------------

    /** The ids among `ids` that are not projects of the organization. */
    async missingProjects(org: string, ids: string[]): Promise<string[]> {
      if (ids.length === 0) return [];
      const rows = await sql<{ id: string }[]>`select id from projects where organization_id = ${org} and id = any(${ids}::text[])`;
      const found = new Set(rows.map((r) => r.id));
      return ids.filter((id) => !found.has(id));
    },

    /** Throws ProjectNameTaken. */
    async insertProject(org: string, name: string, description: string | null): Promise<Project> {
      const [row] = await sql<ProjectRow[]>`
        insert into projects (id, organization_id, name, description) values (${newId("prj")}, ${org}, ${name}, ${description})
        returning *, '' as cursor_at`.catch((e: unknown) => mapPgError(e, PROJECT_RULES));
      if (!row) throw new Error("insert returned no row");
      return toProject(row);
    },

    async project(org: string, id: string): Promise<Project | undefined> {
      const [row] = await sql<ProjectRow[]>`select *, '' as cursor_at from projects where organization_id = ${org} and id = ${id}`;
      return row && toProject(row);
    },

    async listProjects(org: string, limit: number, after: string | undefined) {
      const [at, id] = after ? decodeKeyset(after, 2) : [null, null];
      const rows = await sql<ProjectRow[]>`
        select *, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at from projects
        where organization_id = ${org}
          ${at === null ? sql`` : sql`and (created_at, id) < (${String(at)}::text::timestamp at time zone 'UTC', ${String(id)})`}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toProject, (r) => [r.cursor_at, r.id]);
    },

    /** Undefined for an unknown project; throws ProjectNameTaken. */
    async updateProject(org: string, id: string, patch: { name?: string | undefined; description?: string | null | undefined }): Promise<Project | undefined> {
      const [row] = await sql<ProjectRow[]>`
        update projects set
          name = ${patch.name === undefined ? sql`name` : sql`${patch.name}`},
          description = ${patch.description === undefined ? sql`description` : sql`${patch.description}`},
          updated_at = now()
        where organization_id = ${org} and id = ${id}
        returning *, '' as cursor_at`.catch((e: unknown) => mapPgError(e, PROJECT_RULES));
      return row && toProject(row);
    },

    /** Deletes a project and unlinks it from current tasks; returns the tasks it was removed from. */
    async deleteProject(org: string, id: string): Promise<{ deleted: boolean; tasks: TaskRow[] }> {
      const tasks = await sql<TaskRow[]>`
        update tasks set project_ids = array_remove(project_ids, ${id})
        where organization_id = ${org} and number in (select task_number from task_projects where organization_id = ${org} and project_id = ${id})
        returning ${cols}`;
      const rows = await sql`delete from projects where organization_id = ${org} and id = ${id} returning 1`;
      return { deleted: rows.length === 1, tasks };
    },

    // -- recurrence ----------------------------------------------------------------------------

    /**
     * The series a tick looks at: the unarchived tasks with a recurrence whose wake-up time has
     * come by `now` (migration 0008). Each with its series' last slot, the occurrences made after
     * the head, and the latest occurrence (the head when none was made yet): its number, status,
     * last change, due day and archiving. `seen` is the head row's xmin, for wakeAt.
     */
    async recurringHeads(now: Date) {
      return sql<
        {
          organization_id: string;
          number: string;
          owner_user_id: string;
          recurrence: Recurrence;
          created_at: Date;
          seen: string;
          last_slot: string | null;
          made: number;
          latest_status: TaskStatus;
          latest_updated_at: Date;
          latest_archived_at: Date | null;
          latest_number: string;
          latest_archived: boolean;
          latest_due: string | null;
        }[]
      >`
        select t.organization_id, t.number::text as number, t.owner_user_id, t.recurrence, t.created_at, t.xmin::text as seen,
          s.last_slot, s.made, coalesce(o.status, t.status) as latest_status, coalesce(o.updated_at, t.updated_at) as latest_updated_at,
          o.archived_at as latest_archived_at,
          coalesce(o.number, t.number)::text as latest_number, coalesce(o.archived, false) as latest_archived,
          (case when o.number is null then t.due_date else o.due_date end)::text as latest_due
        from tasks t
        cross join lateral (
          select max(slot)::text as last_slot, count(*)::int as made from recurrence_slots rs
          where rs.organization_id = t.organization_id and rs.head_number = t.number
        ) s
        left join lateral (
          select x.status, x.updated_at, x.number, x.archived, x.archived_at, x.due_date from recurrence_slots rs
          join tasks x on x.organization_id = rs.organization_id and x.number = rs.task_number
          where rs.organization_id = t.organization_id and rs.head_number = t.number
          order by rs.slot desc limit 1
        ) o on true
        where t.recurrence is not null and not t.archived and t.recurrence_wake <= ${now}`;
    },

    /**
     * Sets the wake-up time of series the scheduler is done with for now, each only if its row is
     * as the scheduler read it (`seen`, its xmin): a head changed meanwhile, or woken by a trigger,
     * is read again on the next tick. Rows another transaction holds are skipped (read again too),
     * so this never waits for, or deadlocks with, a user's write.
     */
    async wakeAt(items: Array<{ org: string; number: number; seen: string; wake: Date }>): Promise<void> {
      if (items.length === 0) return;
      const input = items.map((i) => ({ org: i.org, number: i.number, seen: i.seen, wake: i.wake.toISOString() }));
      await sql`
        with x as (
          select * from jsonb_to_recordset(${sql.json(input as never)}) as x(org text, number bigint, seen text, wake timestamptz)
        ), free as (
          select t.organization_id, t.number, x.wake from tasks t join x on t.organization_id = x.org and t.number = x.number
          where t.xmin = x.seen::xid
          for update of t skip locked
        )
        update tasks t set recurrence_wake = free.wake from free
        where t.organization_id = free.organization_id and t.number = free.number`;
    },

    /**
     * Records the occurrences of series of one organization, each (head, slot) → task; answers how
     * many were recorded, fewer when some slot was recorded already (by anyone). In head order, so
     * two transactions recording overlapping sets wait for each other in one order.
     */
    async recordSlots(org: string, items: Array<{ head: number; slot: string; task: number }>): Promise<number> {
      if (items.length === 0) return 0;
      const rows = await sql`
        insert into recurrence_slots (organization_id, head_number, slot, task_number)
        select ${org}, head, slot, task
        from unnest(${items.map((i) => i.head)}::bigint[], ${items.map((i) => i.slot)}::date[], ${items.map((i) => i.task)}::bigint[]) as x(head, slot, task)
        order by head, slot
        on conflict do nothing
        returning 1`;
      return rows.length;
    },

    /** Which of these (head, slot) pairs have their occurrence already (a cheap check before making them), as `head/slot`. */
    async slotsTaken(org: string, items: Array<{ head: number; slot: string }>): Promise<Set<string>> {
      if (items.length === 0) return new Set();
      const rows = await sql<{ key: string }[]>`
        select rs.head_number::text || '/' || rs.slot::text as key
        from unnest(${items.map((i) => i.head)}::bigint[], ${items.map((i) => i.slot)}::date[]) as x(head, slot)
        join recurrence_slots rs on rs.organization_id = ${org} and rs.head_number = x.head and rs.slot = x.slot`;
      return new Set(rows.map((r) => r.key));
    },

    /** Several tasks of one organization as rows (unknown numbers are absent). */
    async tasksByNumber(org: string, numbers: number[]): Promise<TaskRow[]> {
      if (numbers.length === 0) return [];
      return sql<TaskRow[]>`select ${cols} from tasks where organization_id = ${org} and number = any(${numbers}::bigint[])`;
    },

    // -- events feed ---------------------------------------------------------------------------

    /**
     * An organization's events, newest first, as the feed shows them: JSON built by Postgres from
     * the outbox's envelope (the trigger of migration 0005 copies it), so the items are the
     * webhook bodies' own objects. Events older than the retention are never shown, swept or not.
     */
    async listEvents(
      org: string,
      q: {
        limit: number;
        after?: string | undefined;
        type?: TaskEventType | undefined;
        task_id?: string | undefined;
        created_gte?: string | undefined;
        created_lt?: string | undefined;
      },
    ) {
      const [at, id] = q.after ? decodeKeyset(q.after, 2) : [null, null];
      const rows = await sql<{ json: string; cursor_at: string; id: string }[]>`
        select ${eventJson} as json, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at, id
        from events
        where organization_id = ${org} and created_at > now() - make_interval(days => ${EVENT_RETENTION_DAYS})
          ${q.type === undefined ? sql`` : sql`and type = ${q.type}`}
          ${q.task_id === undefined ? sql`` : sql`and payload->'data'->>'id' = ${q.task_id}`}
          ${q.created_gte === undefined ? sql`` : sql`and created_at >= ${q.created_gte}::timestamptz`}
          ${q.created_lt === undefined ? sql`` : sql`and created_at < ${q.created_lt}::timestamptz`}
          ${at === null ? sql`` : sql`and (created_at, id) < (${String(at)}::text::timestamp at time zone 'UTC', ${String(id)})`}
        order by created_at desc, id desc
        limit ${q.limit + 1}`;
      return rawPageOf<Event, (typeof rows)[number]>(rows, q.limit, (r) => [r.cursor_at, r.id]);
    },

    async event(org: string, id: string): Promise<RawJson<Event> | undefined> {
      const [row] = await sql<{ json: string }[]>`
        select ${eventJson} as json from events
        where organization_id = ${org} and id = ${id} and created_at > now() - make_interval(days => ${EVENT_RETENTION_DAYS})`;
      return row && new RawJson<Event>(Buffer.from(row.json));
    },

    /** Deletes events past the retention, a batch at a time; answers how many went. */
    async sweepEvents(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        const rows = await sql`
          delete from events where id in (
            select id from events where created_at <= now() - make_interval(days => ${EVENT_RETENTION_DAYS}) limit ${batch})
          returning 1`;
        return rows.length;
      });
    },

    // -- outbox and idempotency -------------------------------------------------------------

    async emit(org: string, type: TaskEventType, task: Task): Promise<void> {
      const id = newId("evt");
      const event = { id, type, organization_id: org, created_at: new Date().toISOString(), data: task };
      await sql`insert into outbox (event_id, type, organization_id, payload) values (${id}, ${type}, ${org}, ${sql.json(event as never)})`;
    },

    /** The service's Idempotency-Key records (libs/db). */
    idempotency,
  };
}
export type TasksRepo = ReturnType<typeof tasksRepo>;
