import type { StreamPosition } from "@tasksvc/contracts";
import { EVENT_RETENTION_DAYS } from "@tasksvc/contracts";
import { type Budgeted, DEFAULT_PAGE_BYTES, pageRows, type Sql, withinBudget } from "@tasksvc/db";
import { CUT_EVENT_COLUMNS, eventBytes, type EventRow, toEvent } from "./events-repo.js";

export type Resume = { kind: "position"; position: StreamPosition } | { kind: "unknown" } | { kind: "pending" };

interface ReplayRow extends EventRow, Budgeted {
  seq: string | null;
  at: string;
}

/** An event's size is its envelope's text, larger than the item by its organization_id and jsonb's spaces, which covers `seq`. */
const COLUMNS = `e.id, e.type, e.payload, to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at,
  e.created_at as sort_at, ${eventBytes("e.")} as bytes`;
/** Unpacked only for the events sent. */
const CUT_COLUMNS = `page_cut.seq, ${CUT_EVENT_COLUMNS}, page_cut.at, page_cut.bytes`;

/** The live stream's order (decision 0027): events published before sequences were recorded come first, in the feed's order. */
export function eventStreamRepo(sql: Sql, pageBytes = DEFAULT_PAGE_BYTES) {
  const columns = sql.unsafe(COLUMNS);
  const retained = () => sql`e.created_at > now() - make_interval(days => ${EVENT_RETENTION_DAYS})`;
  const ofTypes = (types: readonly string[] | undefined) => (types === undefined ? sql`` : sql`and e.type = any(${types as string[]}::text[])`);
  return {
    async record(rows: ReadonlyArray<{ event_id: string; organization_id: string; type: string }>, seqs: readonly number[]): Promise<void> {
      if (rows.length === 0) return;
      await sql`
        with recorded as (
          insert into event_stream (organization_id, stream_seq, event_id, type)
          select * from unnest(${rows.map((r) => r.organization_id)}::text[], ${seqs as number[]}::int8[],
                               ${rows.map((r) => r.event_id)}::text[], ${rows.map((r) => r.type)}::text[])
          on conflict do nothing
          returning 1)
        update event_stream_position set last_seq = greatest(last_seq, ${Math.max(...seqs)})`;
    },

    async resumeAfter(org: string, eventId: string): Promise<Resume> {
      const [row] = await sql<Array<{ seq: string | null; at: string; id: string; legacy: boolean }>>`
        select s.stream_seq as seq, to_char(e.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, e.id,
               e.created_at < p.since as legacy
        from events e cross join event_stream_position p
        left join event_stream s on s.event_id = e.id
        where e.organization_id = ${org} and e.id = ${eventId} and ${retained()}`;
      if (!row) return { kind: "unknown" };
      if (row.seq !== null) return { kind: "position", position: { seq: Number(row.seq) } };
      if (row.legacy) return { kind: "position", position: { at: row.at, id: row.id } };
      // Written, but the relay has not published it yet: it will be, within moments.
      return { kind: "pending" };
    },

    /** The recorded prefix is read in the same statement, so the page and the prefix agree. */
    async page(org: string, from: StreamPosition, types: readonly string[] | undefined, limit: number) {
      if ("seq" in from) {
        const events = sql`
          select s.stream_seq as seq, ${columns}
          from event_stream s join events e on e.id = s.event_id
          where s.organization_id = ${org} and s.stream_seq > ${from.seq} ${types === undefined ? sql`` : sql`and s.type = any(${types as string[]}::text[])`}
            and ${retained()}
          order by s.stream_seq
          limit ${limit}`;
        const rows = await sql<Array<ReplayRow & { through: string }>>`
          select p.last_seq as through, r.*
          from event_stream_position p
          left join lateral (${withinBudget(sql, events, "item.bytes", "item.seq", pageBytes, CUT_COLUMNS)}) r on true
          order by r.page_row`;
        const through = Number(rows[0]?.through ?? 0);
        const found = rows.filter((r) => r.id !== null);
        const { kept, hasMore } = pageRows(found, limit);
        const last = kept.at(-1);
        return {
          items: kept.map((r) => ({ seq: Number(r.seq), event: toEvent(r) })),
          next: last ? { seq: Number(last.seq) } : from,
          more: hasMore || found.length === limit,
          through,
        };
      }
      const older = sql`
        select null::int8 as seq, ${columns}
        from events e
        where e.organization_id = ${org} and e.created_at < p.since and ${retained()}
          and (e.created_at, e.id) > (${from.at}::timestamptz, ${from.id}) ${ofTypes(types)}
          and not exists (select 1 from event_stream s where s.event_id = e.id)
        order by e.created_at, e.id
        limit ${limit}`;
      const rows = await sql<Array<ReplayRow & { through: string }>>`
        select p.last_seq as through, r.*
        from event_stream_position p
        left join lateral (${withinBudget(sql, older, "item.bytes", "item.sort_at, item.id", pageBytes, CUT_COLUMNS)}) r on true
        order by r.page_row`;
      const through = Number(rows[0]?.through ?? 0);
      const found = rows.filter((r) => r.id !== null);
      const { kept, hasMore } = pageRows(found, limit);
      const last = kept.at(-1);
      const full = hasMore || found.length === limit;
      return {
        items: kept.map((r) => ({ seq: 0, event: toEvent(r) })),
        next: full && last ? { at: last.at, id: last.id } : { seq: 0 },
        more: true,
        through,
      };
    },
  };
}
export type EventStreamRepo = ReturnType<typeof eventStreamRepo>;
