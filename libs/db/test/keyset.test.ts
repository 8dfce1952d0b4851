import { isAppError } from "@tasksvc/errors";
import type postgres from "postgres";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { decodeKeyset, KEYSET_TIME, type Keyset, keyset, keysetAfter, pageOf } from "../src/index.js";
import { recordingSql } from "./recorder.js";

// keysetAfter() against real Postgres: the statement it sends is the one the hand-written
// predicate sent (text, parameters, their types), and paging with it gives every row once.
const stack = inject("stack");
const SCHEMA = "keyset_test";

const { sql, sentBy } = recordingSql(stack.databaseUrl, { search_path: SCHEMA });

// Ties on purpose: four instants for 30 rows, two of them a microsecond apart (one millisecond).
// Sent as text: a parameter the server types timestamptz goes through a Date, which drops the microseconds.
const INSTANTS = ["2024-05-01 10:00:00.000001+00", "2024-05-01 10:00:00.000002+00", "2024-05-01 10:00:00.5+00", "2024-05-01 09:00:00+00"];
const ROWS = 30;
// Numbers past 2^53, where a JS number would round: they travel as text.
const BIG = 9007199254740993n;

beforeAll(async () => {
  await sql`create schema if not exists keyset_test`;
  await sql`create table keyset_test.items (id text primary key, created_at timestamptz not null, number bigint not null, seq int not null)`;
  for (let i = 0; i < ROWS; i++) {
    const id = `r${String(i).padStart(2, "0")}`;
    await sql`insert into keyset_test.items values (${id}, ${INSTANTS[i % INSTANTS.length] ?? ""}::text::timestamptz, ${String(BIG + BigInt((i * 7) % ROWS))}, ${(i * 11) % ROWS})`;
  }
});
afterAll(async () => {
  await sql`drop schema keyset_test cascade`;
  await sql.end({ timeout: 1 });
});

interface Item {
  id: string;
  cursor_at: string;
  number: string;
  seq: number;
}

/**
 * The lists of the services, each as its repository wrote the predicate by hand before
 * keysetAfter() (the `old` fragment), with its ORDER BY and its cursor's values.
 */
const SHAPES: Array<{
  name: string;
  key: Keyset;
  orderBy: string;
  keyOf: (r: Item) => Array<string | number>;
  old: (values: Array<string | number> | null) => postgres.PendingQuery<postgres.Row[]>;
}> = [
  {
    name: "(created_at, id) descending (projects, events, attachments, endpoints, deliveries, api keys)",
    key: keyset("desc", ["created_at", "timestamp"], ["id", "text"]),
    orderBy: "created_at desc, id desc",
    keyOf: (r) => [r.cursor_at, r.id],
    old: (v) => (v === null ? sql`` : sql`and (created_at, id) < (${String(v[0])}::text::timestamp at time zone 'UTC', ${String(v[1])})`),
  },
  {
    name: "(updated_at, number) descending, number a bigint (tasks)",
    key: keyset("desc", ["created_at", "timestamp"], ["number", "bigint"]),
    orderBy: "created_at desc, number desc",
    keyOf: (r) => [r.cursor_at, r.number],
    old: (v) => (v === null ? sql`` : sql`and (created_at, number) < (${String(v[0])}::text::timestamp at time zone 'UTC', ${String(v[1])}::bigint)`),
  },
  {
    name: "(m.created_at, m.user_id) ascending, qualified (members)",
    key: keyset("asc", ["m.created_at", "timestamp"], ["m.id", "text"]),
    orderBy: "m.created_at, m.id",
    keyOf: (r) => [r.cursor_at, r.id],
    old: (v) => (v === null ? sql`` : sql`and (m.created_at, m.id) > (${String(v[0])}::text::timestamp at time zone 'UTC', ${String(v[1])})`),
  },
  {
    name: "seq descending, one integer column (task history)",
    key: keyset("desc", ["seq", "integer"]),
    orderBy: "seq desc",
    keyOf: (r) => [r.seq],
    old: (v) => (v === null ? sql`` : sql`and seq < ${Number(v[0])}`),
  },
  {
    name: "attempt ascending, one integer column (a delivery's attempts)",
    key: keyset("asc", ["seq", "integer"]),
    orderBy: "seq",
    keyOf: (r) => [r.seq],
    old: (v) => (v === null ? sql`` : sql`and seq > ${Number(v[0])}`),
  },
];

/** One page of `shape` after `predicate`, as the repositories select it. */
function pageQuery(shape: (typeof SHAPES)[number], predicate: postgres.PendingQuery<postgres.Row[]>, limit: number) {
  return sql<Item[]>`
    select id, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at, number::text as number, seq
    from items m
    where true
      ${predicate}
    order by ${sql.unsafe(shape.orderBy)}
    limit ${limit + 1}`;
}

describe("keysetAfter", () => {
  for (const shape of SHAPES) {
    it(`when a list pages by ${shape.name}, then its statement is the hand-written one and every row comes once, in order`, async () => {
      const all = await sql<{ id: string }[]>`select id from items m order by ${sql.unsafe(shape.orderBy)}`;
      expect(all).toHaveLength(ROWS);
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; pages <= ROWS; pages++) {
        const before = await sentBy(pageQuery(shape, shape.old(after === undefined ? null : decodeKeyset(after, shape.key.types.length)), 4));
        const q = pageQuery(shape, keysetAfter(sql, after, shape.key), 4);
        expect(await sentBy(q)).toEqual(before);
        const rows = await q;
        const page = pageOf(rows, 4, (r) => r.id, shape.keyOf);
        seen.push(...page.data);
        if (page.next_cursor === null) break;
        after = page.next_cursor;
      }
      expect(seen).toEqual(all.map((r) => r.id));
    });
  }

  it("when there is no cursor, then the predicate is empty, as the hand-written one was", async () => {
    const shape = SHAPES[0];
    if (!shape) throw new Error("no shape");
    const before = await sentBy(pageQuery(shape, shape.old(null), 2));
    expect(await sentBy(pageQuery(shape, keysetAfter(sql, undefined, shape.key), 2))).toEqual(before);
    expect(before.string).not.toContain(" < (");
  });

  it("when a cursor was handed out before the helper, then it still starts the page after its row", async () => {
    // ["2024-05-01T10:00:00.000002","r07"] as the lists have always encoded it.
    const cursor = "WyIyMDI0LTA1LTAxVDEwOjAwOjAwLjAwMDAwMiIsInIwNyJd";
    const q = sql<{ id: string }[]>`select id from items where true ${keysetAfter(sql, cursor, keyset("desc", ["created_at", "timestamp"], ["id", "text"]))}
      order by created_at desc, id desc limit 1`;
    const s = await sentBy(q);
    expect(s.string).toContain("and (created_at, id) < ($1::text::timestamp at time zone 'UTC', $2)");
    expect(s.parameters).toEqual(["2024-05-01T10:00:00.000002", "r07"]);
    // The rows of that instant are r01, r05, r09, …: the next one down from r07 is r05 (a cursor
    // names a position, not necessarily a row still there).
    expect((await q).map((r) => r.id)).toEqual(["r05"]);
  });

  it("when a cursor is not one of the list's (garbage, another arity), then it is the 400 at /after", () => {
    const key = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
    for (const after of ["bm90LWEtY3Vyc29y", Buffer.from(JSON.stringify([1])).toString("base64url")]) {
      let thrown: unknown;
      try {
        void keysetAfter(sql, after, key); // a fragment: never run on its own
      } catch (e) {
        thrown = e;
      }
      expect(isAppError(thrown) && thrown.status).toBe(400);
    }
  });

  it("when a keyset names something that is not a column, then it is refused where it is made", () => {
    expect(() => keyset("desc", ["id; drop table items", "text"])).toThrow(/not a column name/);
    expect(() => keyset("desc")).toThrow(/at least one column/);
  });
});
