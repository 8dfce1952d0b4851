import type { EndpointEvent, Event, EventEnvelope, EventType, Task, TaskChanges, TaskEventType } from "@tasksvc/contracts";
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
 * The envelope of a task event (TaskEvent of the contracts), for the outbox, from the columns
 * `event_id`, `type`, `organization_id` and `data` (the task, jsonb) of the rows it is selected
 * from. Every event is written through it: emit() below for one, the create statement
 * (tasks-repo) for a batch. Its time is the database's: `now()`, the writing transaction's, the
 * time the change's rows carry (a create's created_at, an update's updated_at, an archive's
 * archived_at), on the clock the webhook fan-out compares with its endpoints' creation.
 */
export const EVENT_ENVELOPE = `(jsonb_build_object('id', event_id, 'type', type, 'organization_id', organization_id,
  'created_at', to_char(now() at time zone 'UTC', ${ISO_SQL}), 'data', data)
  || case when changes is null then '{}'::jsonb else jsonb_build_object('changes', changes) end)`;

/** A stored event's columns for the feed: its id and its envelope, from which eventBody() builds the item. */
const EVENT_COLUMNS = "id, payload";
/** Newest first: `order by created_at desc, id desc`. */
const EVENT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

/**
 * A stored event's size for a page's byte budget: its envelope's text, which holds every byte of
 * the item (jsonb's text escapes as JSON does, and writes a space after each `:` and `,`). Stored
 * with the event (migration 0016); measured here only for events written before.
 */
export const eventBytes = (e = "") => `coalesce(${e}bytes, octet_length(${e}payload::text))`;

/** The feed's and the replay's columns of an event, over a page cut at its budget (`page_cut`, libs/db withinBudget). */
export const CUT_EVENT_COLUMNS = "page_cut.id, page_cut.payload";

/** A stored event's columns, as the feed and the replay read them. */
export interface EventRow {
  id: string;
  payload: EventEnvelope;
}

/** A feed item: the stream's message and the webhook body come from the same builder. */
export const toEvent = (r: EventRow): Event => eventBody(r.payload);

/**
 * The outbox (relayed to JetStream, relay.ts) and the events feed the outbox's trigger fills
 * (migration 0005). `pageBytes`: the bytes of events one feed page may carry (pageBudget() of
 * the service's NATS connection).
 */
export function eventsRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const envelope = sql.unsafe(EVENT_ENVELOPE);
  const eventColumns = sql.unsafe(EVENT_COLUMNS);
  const keysetTime = sql.unsafe(KEYSET_TIME);
  return {
    /**
     * Writes one event to the outbox, in the caller's transaction: `task` is the task after the
     * change, `changes` what the change did to it (task.updated and task.archived).
     */
    async emit(org: string, type: TaskEventType, task: Task, changes?: TaskChanges): Promise<void> {
      await sql`
        insert into outbox (event_id, type, organization_id, payload)
        select event_id, type, organization_id, ${envelope}
        from (select ${newId("evt")}::text as event_id, ${type}::text as type, ${org}::text as organization_id,
          ${jsonb(sql, task)}::jsonb as data, ${changes === undefined ? null : jsonb(sql, changes)}::jsonb as changes) e`;
    },

    /**
     * Takes a webhook endpoint's operational event (the webhooks service's, DESIGN.md section 11)
     * into the outbox, so that it reaches the feed, the stream and the fan-out as task events do.
     * Once: an event the feed has, or the outbox holds, adds nothing (its message redelivered, or
     * taken by two replicas at once). Answers whether it added the event.
     */
    async takeIn(e: EndpointEvent): Promise<boolean> {
      const rows = await sql`
        insert into outbox (event_id, type, organization_id, payload)
        select ${e.id}, ${e.type}, ${e.organization_id}, ${jsonb(sql, e)}::jsonb
        where not exists (select 1 from events where id = ${e.id})
        on conflict (event_id) do nothing
        returning 1`;
      return rows.length === 1;
    },

    /**
     * An organization's events, newest first, as the feed shows them: from the outbox's envelope
     * (the trigger of migration 0005 copies it), so the items are the webhook bodies' own objects,
     * encoded here (the envelope is jsonb, whose text is not compact). Events older than the
     * retention are never shown, swept or not.
     */
    async list(
      org: string,
      q: {
        limit: number;
        after?: string | undefined;
        type?: EventType | undefined;
        task_id?: string | undefined;
        created_gte?: string | undefined;
        created_lt?: string | undefined;
        /** Only these types (the ones the caller may see); all when absent. */
        visible?: readonly EventType[] | undefined;
      },
      /** When the caller stops waiting (Unix milliseconds): the statement is cancelled then. */
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

    /** Deletes events past the retention, a batch at a time; answers how many went. */
    async sweep(batch = 10_000): Promise<number> {
      return deleteInBatches(batch, async () => {
        // Their places in the live stream's order go with them (event_stream, by event id).
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
