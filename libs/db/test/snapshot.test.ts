import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, type Database, READ_SUFFIX } from "../src/index.js";

// Snapshots for long reads (exports): one moment for the whole transaction, nothing written, a
// connection of their own that neither takes a write's slot nor holds back the sync horizon, and
// the statement time limit on each statement.
const stack = inject("stack");
const SCHEMA = "snapshot_test";

let db: Database;
beforeAll(async () => {
  db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8, txMax: 1, snapshots: 1, statementTimeoutMs: 1500 });
  await db.sql.unsafe(`create schema if not exists ${SCHEMA}`);
  await db.sql.unsafe(`create table if not exists ${SCHEMA}.items (n int primary key)`);
});
afterAll(async () => {
  await db.sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

const count = async (sql: Database["sql"] | Parameters<Parameters<Database["snapshot"]>[0]>[0]) =>
  (await sql<{ n: number }[]>`select count(*)::int as n from items`)[0]?.n ?? -1;

describe("snapshots", () => {
  it("when rows are written while a snapshot reads, then every statement of the snapshot sees the moment it began", async () => {
    await db.sql`insert into items select generate_series(1, 10)`;
    const seen = await db.snapshot(async (t) => {
      const first = await count(t);
      // Committed by a write transaction while the snapshot is open: its slot is not the snapshot's.
      await db.tx((w) => w`insert into items select generate_series(11, 15)`);
      await db.sql`delete from items where n <= 2`;
      return [first, await count(t)];
    });
    expect(seen).toEqual([10, 10]);
    expect(await count(db.sql)).toBe(13);
  });

  it("when a snapshot tries to write, then the server refuses it (25006) and nothing is written", async () => {
    const failure = await db
      .snapshot((t) => t`insert into items values (1000)`.execute())
      .then(
        () => "ok",
        (e: unknown) => String((e as { code?: unknown }).code),
      );
    expect(failure).toBe("25006");
    expect((await db.sql`select 1 from items where n = 1000`).length).toBe(0);
  });

  it("when a snapshot is open, then its connection is named a read's and holds no transaction id, so the sync horizon does not wait for it", async () => {
    const seen = await db.snapshot(async (t) => {
      await count(t);
      const [me] = await t<{ pid: number }[]>`select pg_backend_pid() as pid`;
      const [row] = await db.sql<{ name: string; xid: string | null; isolation: string }[]>`
        select application_name as name, backend_xid::text as xid from pg_stat_activity where pid = ${me?.pid ?? 0}`;
      const [iso] = await t<{ isolation: string }[]>`select current_setting('transaction_isolation') as isolation`;
      return { ...row, isolation: iso?.isolation };
    });
    expect(seen.name?.endsWith(`-snapshot${READ_SUFFIX}`)).toBe(true);
    expect(seen.xid).toBeNull();
    expect(seen.isolation).toBe("repeatable read");
  });

  it("when a statement of a snapshot runs past the time limit, then the server stops it (57014)", async () => {
    const failure = await db
      .snapshot((t) => t`select pg_sleep(5)`.execute())
      .then(
        () => "ok",
        (e: unknown) => String((e as { code?: unknown }).code),
      );
    expect(failure).toBe("57014");
    expect(await db.snapshot((t) => count(t))).toBeGreaterThan(0);
  });

  it("when a pool has no snapshot connections, then a snapshot is refused, naming the option", async () => {
    const plain = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4 });
    try {
      expect(plain.snapshotConnections).toBe(0);
      await expect(plain.snapshot(async () => 1)).rejects.toThrow(/snapshots/);
    } finally {
      await plain.end({ timeout: 1 });
    }
  });
});
