import { jsonb, KeyRecordedMeanwhile, mapPgError, PG, type PgErrorRule, type Sql } from "@tasksvc/db";
import { EVENT_ENVELOPE } from "./events-repo.js";
import { type Content, type SeriesLink, TASK_COLUMNS, type TaskRow, taskTemplate, TEMPLATE_COMPLETION } from "./task-json.js";
import { stampColumns, type VersionStamp } from "./version-stamp.js";

export class ReferenceVanished extends Error {
  constructor(readonly what: "project" | "parent" | "label" | "custom field") {
    super(`the ${what} named by the create no longer exists`);
    this.name = "ReferenceVanished";
  }
}

/** A twin recorded the key first, and the two references the domain checked; the other foreign keys point at rows the statement inserts. */
const CREATE_RULES: readonly PgErrorRule[] = [
  { code: PG.uniqueViolation, constraint: "idempotency_pkey", to: () => new KeyRecordedMeanwhile() },
  { code: PG.foreignKeyViolation, constraint: "task_projects_project_id_fkey", to: () => new ReferenceVanished("project") },
  { code: PG.foreignKeyViolation, constraint: "tasks_organization_id_parent_number_fkey", to: () => new ReferenceVanished("parent") },
];

export interface NewTask {
  owner: string;
  content: Content;
  versionId: string;
  eventId: string;
  credentialId: string | null;
  /** The user whose credential created it; null for an occurrence the service made. */
  actor: string | null;
  /** What its first version records of the write. */
  by: VersionStamp;
  key: string | null;
  /** Creates of several traces share the statement. */
  traceparent?: string | null;
  series?: SeriesLink | null;
  /** The custom field definitions its values were checked against, as they were (row versions). */
  fieldsSeen?: ReadonlyArray<FieldStamp>;
}

export interface FieldStamp {
  id: string;
  stamp: string;
}

/** Prefixed: the recordset's `actor_id` is the event's (the user). */
function versionColumns(by: VersionStamp) {
  const s = stampColumns(by);
  return {
    v_actor_type: s.actor_type,
    v_actor_id: s.actor_id,
    v_actor_user_id: s.actor_user_id,
    v_request_id: s.request_id,
    v_batch_key: s.batch_key,
  };
}

/**
 * One statement, so one implicit transaction and one round trip; the organization's counter row
 * stays locked to the commit. Nothing is written when it throws KeyRecordedMeanwhile or
 * ReferenceVanished (a project or parent deleted since the domain's checks).
 */
export async function createTasks(sql: Sql, org: string, items: NewTask[]): Promise<TaskRow[]> {
  const cols = sql.unsafe(TASK_COLUMNS);
  const input = items.map((it, i) => ({
    ord: i + 1,
    owner_user_id: it.owner,
    version_id: it.versionId,
    event_id: it.eventId,
    credential_id: it.credentialId,
    actor_id: it.actor,
    ...versionColumns(it.by),
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
    assignee_ids: it.content.assignee_ids,
    label_ids: it.content.label_ids,
    custom_fields: it.content.custom_fields,
  }));
  const labels = [...new Set(items.flatMap((it) => it.content.label_ids))];
  const parents = [...new Set(items.flatMap((it) => (it.content.parent_number === null ? [] : [it.content.parent_number])))];
  const seen = [...new Map(items.flatMap((it) => it.fieldsSeen ?? []).map((f) => [f.id, f])).values()];
  const templateCompletion = sql.unsafe(TEMPLATE_COMPLETION);
  const envelope = sql.unsafe(EVENT_ENVELOPE);
  // Labels are locked (key share) before anything is written: one deleted since the domain's check
  // leaves the statement writing nothing, its number included.
  const rows = await sql<TaskRow[]>`
    with lk as (
      select id from labels where organization_id = ${org} and id = any(${labels}::text[]) for key share
    ), lf as (
      select f.id from custom_fields f join jsonb_to_recordset(${jsonb(sql, seen)}) as s(id text, stamp text) on s.id = f.id
      where f.organization_id = ${org} and f.xmin::text = s.stamp
      for share of f
    ), lp as (
      -- A parent sent to the trash since the domain's check: the trash holds its row (for update) to
      -- its commit, and this lock then reads the row again, trashed.
      select number from tasks where organization_id = ${org} and number = any(${parents}::bigint[]) and deleted_at is null for key share
    ), c as (
      insert into org_counters as c (organization_id, last_number)
      select ${org}, ${items.length} where (select count(*) from lk) = ${labels.length} and (select count(*) from lf) = ${seen.length}
        and (select count(*) from lp) = ${parents.length}
      on conflict (organization_id) do update set last_number = c.last_number + ${items.length}
      returning last_number
    ), x as (
      select c.last_number - ${items.length} + i.ord as number, i.*
      from c, jsonb_to_recordset(${jsonb(sql, input)}) as i(ord int, owner_user_id text, version_id text, event_id text,
        credential_id text, actor_id text, key text, traceparent text, template jsonb, parent_number bigint, title text, description text, status text,
        priority text, start_date timestamptz, due_date timestamptz, notes text, story_points numeric, recurrence jsonb, project_ids jsonb,
        assignee_ids jsonb, label_ids jsonb, custom_fields jsonb, series_head bigint, series_slot date, v_actor_type text, v_actor_id text,
        v_actor_user_id text, v_request_id text, v_batch_key text)
    ), t as (
      insert into tasks (organization_id, number, owner_user_id, parent_number, current_version_id, version_count, version,
        title, description, status, priority, start_date, due_date, notes, story_points, recurrence, project_ids, assignee_ids,
        label_ids, custom_fields, series_head, series_slot, created_at, updated_at)
      select ${org}, number, owner_user_id, parent_number, version_id, 1, 1, title, description, status, priority, start_date,
        due_date, notes, story_points, recurrence, array(select jsonb_array_elements_text(project_ids)),
        array(select jsonb_array_elements_text(assignee_ids)), array(select jsonb_array_elements_text(label_ids)),
        custom_fields, series_head, series_slot,
        now(), now()
      from x
      returning *
    ), v as (
      insert into task_versions (id, organization_id, task_number, seq, version, title, description, status, priority, start_date,
        due_date, notes, story_points, recurrence, project_ids, assignee_ids, label_ids, custom_fields, created_at,
        actor_type, actor_id, actor_user_id, request_id, batch_key)
      select t.current_version_id, t.organization_id, t.number, 1, t.version, t.title, t.description, t.status, t.priority, t.start_date,
        t.due_date, t.notes, t.story_points, t.recurrence, t.project_ids, t.assignee_ids, t.label_ids, t.custom_fields, t.created_at,
        x.v_actor_type, x.v_actor_id, x.v_actor_user_id, x.v_request_id, x.v_batch_key
      from t join x on x.number = t.number
    ), f as (
      -- The owner, then each assignee, follow the task (an assignee who owns it, once).
      insert into task_followers (organization_id, task_number, user_id, reason)
      select organization_id, number, owner_user_id, 'owner' from t
      union all
      select organization_id, number, a, 'assignee' from t, unnest(assignee_ids) a where a <> owner_user_id
    ), p as (
      insert into task_projects (organization_id, task_number, project_id)
      select organization_id, number, unnest(project_ids) from t
    ), api as (
      select x.event_id, 'task.created'::text as type, ${org}::text as organization_id, x.actor_id, x.template || ${templateCompletion} as data,
        null::jsonb as changes, x.credential_id, x.key, x.traceparent, t.number
      from t join x on x.number = t.number
    ), o as (
      insert into outbox (event_id, type, organization_id, payload, traceparent)
      select event_id, type, organization_id, ${envelope}, traceparent from api order by number
    ), r as (
      insert into idempotency (credential_id, key, operation, result, organization_id)
      select credential_id, key, 'createTask', data, organization_id from api where key is not null
    )
    select ${cols} from t order by t.number`.catch((e: unknown) => mapPgError(e, CREATE_RULES));
  if (rows.length === 0 && items.length > 0) throw new ReferenceVanished(parents.length > 0 ? "parent" : labels.length > 0 ? "label" : "custom field");
  return rows;
}
