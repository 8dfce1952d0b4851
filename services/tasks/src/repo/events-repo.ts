import type {
  Comment,
  CommentEventType,
  DeletedCommentData,
  EndpointEvent,
  Event,
  EventEnvelope,
  EventType,
  PurgeEventType,
  Task,
  TaskChanges,
  TaskEventType,
} from "@tasksvc/contracts";
import { EVENT_RETENTION_DAYS, eventBody } from "@tasksvc/contracts";
import {
  type Budgeted,
  cancelAt,
  DEFAULT_PAGE_BYTES,
  deleteInBatches,
  jsonb,
  KEYSET_TIME,
  keyset,
  keysetAfter,
  newId,
  pageOf,
  type Sql,
  withinBudget,
} from "@tasksvc/db";
import { ISO_SQL } from "./sql-time.js";

/**
 * Every event the tasks service writes goes through it. `actor_id` is the message's, like
 * `organization_id`: the bodies (eventBody) never show it. Its time is the writing transaction's `now()`, the time the
 * change's rows carry, on the clock the webhook fan-out compares with its endpoints' creation.
 */
export const EVENT_ENVELOPE = `(jsonb_build_object('id', event_id, 'type', type, 'organization_id', organization_id, 'actor_id', actor_id,
  'created_at', to_char(now() at time zone 'UTC', ${ISO_SQL}), 'data', data)
  || case when changes is null then '{}'::jsonb else jsonb_build_object('changes', changes) end)`;

const EVENT_COLUMNS = "id, payload";
const EVENT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

/**
 * The envelope's text holds every byte of the item (jsonb's text escapes as JSON does, with a space
 * after each `:` and `,`). Stored with the event since migration 0016; measured only for older events.
 */
export const eventBytes = (e = "") => `coalesce(${e}bytes, octet_length(${e}payload::text))`;

export const CUT_EVENT_COLUMNS = "page_cut.id, page_cut.payload";

export interface EventRow {
  id: string;
  payload: EventEnvelope;
}

/** The stream's message and the webhook body come from the same builder. */
export const toEvent = (r: EventRow): Event => eventBody(r.payload);

export function eventsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const envelope = sql.unsafe(EVENT_ENVELOPE);
  const eventColumns = sql.unsafe(EVENT_COLUMNS);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  const insertEvent = async (org: string, actor: string | null, type: EventType, data: unknown, changes: TaskChanges | undefined, rewindId?: string) => {
    // An undo's events name their rewind, an additive member of the envelope that the one body builder (eventBody) carries on.
    const rewind = rewindId === undefined ? sql`` : sql`|| jsonb_build_object('rewind_id', ${rewindId}::text)`;
    await sql`
      insert into outbox (event_id, type, organization_id, payload)
      select event_id, type, organization_id, ${envelope} ${rewind}
      from (select ${newId("evt")}::text as event_id, ${type}::text as type, ${org}::text as organization_id, ${actor}::text as actor_id,
        ${jsonb(sql, data)}::jsonb as data, ${changes === undefined ? null : jsonb(sql, changes)}::jsonb as changes) e`;
  };
  return {
    /** `actor`: the user whose credential made the change, null for the service's own work. */
    async emit(org: string, actor: string | null, type: TaskEventType, task: Task, changes?: TaskChanges, rewindId?: string): Promise<void> {
      await insertEvent(org, actor, type, task, changes, rewindId);
    },

    /** In the comment's transaction, like a task's events. */
    async emitComment(org: string, actor: string, type: CommentEventType, data: Comment | DeletedCommentData): Promise<void> {
      await insertEvent(org, actor, type, data, undefined);
    },

    /** Many events of one statement, in the order given, none with `changes`; no actor unless named (the service's own work). */
    async emitEach(
      items: ReadonlyArray<{ organization_id: string; type: TaskEventType | PurgeEventType; task: Task | { id: string }; actor?: string | null }>,
    ): Promise<void> {
      if (items.length === 0) return;
      const input = items.map((i, ord) => ({
        ord,
        event_id: newId("evt"),
        type: i.type,
        organization_id: i.organization_id,
        actor_id: i.actor ?? null,
        data: i.task,
      }));
      await sql`
        insert into outbox (event_id, type, organization_id, payload)
        select event_id, type, organization_id, ${envelope}
        from (select x.*, null::jsonb as changes
          from jsonb_to_recordset(${jsonb(sql, input)}) as x(ord int, event_id text, type text, organization_id text, actor_id text, data jsonb)) e
        order by ord`;
    },

    /** Once: an event the feed has, or the outbox holds, adds nothing (redelivered, or taken by two replicas at once). */
    async takeIn(e: EndpointEvent): Promise<boolean> {
      const rows = await sql`
        insert into outbox (event_id, type, organization_id, payload)
        select ${e.id}, ${e.type}, ${e.organization_id}, ${jsonb(sql, e)}::jsonb
        where not exists (select 1 from events where id = ${e.id})
        on conflict (event_id) do nothing
        returning 1`;
      return rows.length === 1;
    },

    /** Encoded here: the envelope is jsonb, whose text is not compact. Events past the retention are never shown, swept or not. */
    async list(
      org: string,
      q: {
        limit: number;
        after?: string | undefined;
        type?: EventType | undefined;
        task_id?: string | undefined;
        created_gte?: string | undefined;
        created_lt?: string | undefined;
        visible?: readonly EventType[] | undefined;
      },
      /** The statement is cancelled then. */
      until?: number,
    ) {
      const page = sql`
        select id, type, payload, to_char(created_at at time zone 'UTC', ${keysetTime}) as cursor_at,
          created_at as sort_at, ${sql.unsafe(eventBytes())} as bytes
        from events
        where organization_id = ${org} and created_at > now() - make_interval(days => ${EVENT_RETENTION_DAYS})
          ${q.type === undefined ? sql`` : sql`and type = ${q.type}`}
          ${q.visible === undefined ? sql`` : sql`and type = any(${q.visible as EventType[]}::text[])`}
          ${q.task_id === undefined ? sql`` : sql`and payload->'data'->>'id' = ${q.task_id}`}
          ${q.created_gte === undefined ? sql`` : sql`and created_at >= ${q.created_gte}::timestamptz`}
          ${q.created_lt === undefined ? sql`` : sql`and created_at < ${q.created_lt}::timestamptz`}
          ${keysetAfter(sql, q.after, EVENT_PAGES)}
        order by created_at desc, id desc
        limit ${q.limit + 1}`;
      const rows = await cancelAt(
        sql<(EventRow & { cursor_at: string } & Budgeted)[]>`${withinBudget(
          sql,
          page,
          "item.bytes",
          "item.sort_at desc, item.id desc",
          pageBytes,
          `${CUT_EVENT_COLUMNS}, page_cut.cursor_at`,
        )}`,
        until,
      );
      return pageOf(rows, q.limit, toEvent, (r) => [r.cursor_at, r.id]);
    },

    async get(org: string, id: string): Promise<Event | undefined> {
      const [row] = await sql<EventRow[]>`
        select ${eventColumns} from events
        where organization_id = ${org} and id = ${id} and created_at > now() - make_interval(days => ${EVENT_RETENTION_DAYS})`;
      return row && toEvent(row);
    },

    async sweep(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        // Their places in the live stream's order go with them.
        const [row] = await sql<Array<{ n: number }>>`
          with gone as (
            delete from events where id in (
              select id from events where created_at <= now() - make_interval(days => ${EVENT_RETENTION_DAYS}) limit ${batch})
            returning id),
          places as (delete from event_stream where event_id in (select id from gone))
          select count(*)::int as n from gone`;
        return row?.n ?? 0;
      });
    },
  };
}
export type EventsRepo = ReturnType<typeof eventsRepo>;
