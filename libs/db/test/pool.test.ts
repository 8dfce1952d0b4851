import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { checkDb, createDb, isConnectionError, type Database } from "../src/index.js";

const stack = inject("stack");
const SCHEMA = "pool_test";

/**
 * Issue 9, finding 1: with postgres.js 3.4.9 a transaction's BEGIN could land on a connection the
 * pool kept handing to others, so their acknowledged autocommit inserts ran inside it and vanished
 * with its ROLLBACK. This load mixes exactly those three kinds of work on a small pool.
 */
async function mixedLoad(db: Database, ms: number) {
  const acknowledged: number[] = [];
  const errors: string[] = [];
  let next = 0;
  let committed = 0;
  const until = Date.now() + ms;
  const loop = async (work: () => Promise<void>) => {
    while (Date.now() < until) {
      try {
        await work();
      } catch (e) {
        if (!(e instanceof Error && e.message === "rollback on purpose")) errors.push(String((e as { code?: string }).code ?? e));
      }
    }
  };
  const insert = async () => {
    const n = next++;
    await db.sql`insert into acked (n) values (${n})`;
    acknowledged.push(n);
  };
  const select = async () => {
    await db.sql`select count(*) from acked`;
  };
  const rolledBack = async () => {
    await db.tx(async (t) => {
      await t`insert into doomed (n) values (${next++})`;
      await t`select pg_sleep(0.001)`;
      throw new Error("rollback on purpose");
    });
  };
  const commit = async () => {
    const n = next++;
    await db.tx(async (t) => {
      await t`insert into acked (n) values (${n})`;
    });
    acknowledged.push(n);
    committed++;
  };
  await Promise.all([
    ...Array.from({ length: 10 }, () => loop(insert)),
    ...Array.from({ length: 10 }, () => loop(select)),
    ...Array.from({ length: 10 }, () => loop(rolledBack)),
    ...Array.from({ length: 4 }, () => loop(commit)),
  ]);
  const stored = new Set((await db.sql<{ n: number }[]>`select n from acked`).map((r) => r.n));
  const lost = acknowledged.filter((n) => !stored.has(n)).length;
  const [doomed] = await db.sql<{ c: number }[]>`select count(*)::int as c from doomed`;
  return { acknowledged: acknowledged.length, committed, stored: stored.size, lost, doomed: doomed?.c ?? -1, errors };
}

describe("createDb", () => {
  let db: Database;
  beforeAll(async () => {
    db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8, txMax: 4 });
    await db.sql.unsafe(`create schema if not exists ${SCHEMA}`);
    await db.sql.unsafe(`create table if not exists ${SCHEMA}.acked (n int primary key)`);
    await db.sql.unsafe(`create table if not exists ${SCHEMA}.doomed (n int primary key)`);
  });
  afterAll(async () => {
    await db.sql.unsafe(`drop schema ${SCHEMA} cascade`);
    await db.end({ timeout: 1 });
  });

  it("when autocommit inserts, selects and rolled-back transactions share a small pool under load, then no acknowledged insert is lost", async () => {
    const r = await mixedLoad(db, 2500);
    console.log(
      `pool: acknowledged ${r.acknowledged} (${r.committed} in transactions), stored ${r.stored}, lost ${r.lost}, rolled-back rows kept ${r.doomed}, errors ${r.errors.length}`,
    );
    expect(r.errors, JSON.stringify(r.errors.slice(0, 5))).toEqual([]);
    expect(r.acknowledged).toBeGreaterThan(1000);
    expect(r.lost).toBe(0);
    expect(r.stored).toBe(r.acknowledged);
    expect(r.doomed).toBe(0);
  });

  it("when more statements than connections run at once, then all complete on the pool's schema", async () => {
    const rows = await Promise.all(
      Array.from({ length: 20 }, (_, i) => db.sql<{ n: number; path: string }[]>`select ${i}::int as n, current_schema() as path`),
    );
    expect(rows.map((r) => r[0]?.n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(rows[0]?.[0]?.path).toBe(SCHEMA);
    const inTx = await Promise.all(Array.from({ length: 12 }, () => db.tx((t) => t<{ path: string }[]>`select current_schema() as path`)));
    expect(inTx.every((r) => r[0]?.path === SCHEMA)).toBe(true);
  });

  it("when code asks the autocommit pool for a transaction, then it is refused", () => {
    expect(() => db.sql.begin(async () => undefined)).toThrow(/db\.tx/);
    expect(() => db.sql.reserve()).toThrow(/db\.tx/);
  });

  it("when a statement of a transaction reaches its connection outside the transaction, then the server refuses to write it and the transaction fails as a lost connection", async () => {
    // What the driver does after a lost connection (a statement it still held is sent on the
    // reconnected connection, outside BEGIN), made deterministic: the function ends the
    // transaction itself and writes on. Without the slots' read-only default this insert
    // committed on its own: a part of a transaction that failed.
    const n = 987_654;
    const failure = await db
      .tx(async (t) => {
        await t`commit`;
        await t`insert into acked (n) values (${n})`;
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    // The server refused the write (25006), and tx() reports what it means: the transaction's
    // connection was lost and nothing of it committed (callers answer 503).
    expect((failure as { code?: string } | undefined)?.code).toBe("CONNECTION_CLOSED");
    expect(await db.sql`select 1 from acked where n = ${n}`).toHaveLength(0);
    // The slot still runs ordinary transactions (its BEGIN is READ WRITE).
    await db.tx(async (t) => {
      await t`insert into acked (n) values (${n})`;
    });
    expect(await db.sql`select 1 from acked where n = ${n}`).toHaveLength(1);
  });

  it("when a transaction's connection is lost and its function writes on, then nothing is sent on a new connection, even with no session settings (transaction pooling)", async () => {
    // Behind a pooler in transaction mode no read-only default can be set: the guard left is
    // that a transaction's driver instance never reconnects. Its own backend is terminated, then
    // the function writes on; a driver that reconnected would commit that insert on its own.
    const pooled = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 4, txMax: 2, poolMode: "transaction" });
    try {
      const n = 876_543;
      const failure = await pooled
        .tx(
          async (t) => {
            await t`select pg_terminate_backend(pg_backend_pid())`.catch(() => undefined);
            await t`insert into ${t(SCHEMA)}.acked (n) values (${n})`;
          },
          { attempts: 1 },
        )
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(isConnectionError(failure), String(failure)).toBe(true);
      expect(await db.sql`select 1 from acked where n = ${n}`).toHaveLength(0);
      // The slot gets a new connection for the next transaction.
      await pooled.tx((t) => t`insert into ${t(SCHEMA)}.acked (n) values (${n})`);
      expect(await db.sql`select 1 from acked where n = ${n}`).toHaveLength(1);
    } finally {
      await pooled.end({ timeout: 1 });
    }
  });

  it("when connections do not resolve names in the service's schema (transaction pooling with no server-side search_path), then the start-up check says how to give it", async () => {
    const pooled = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2, txMax: 1, poolMode: "transaction" });
    try {
      await expect(checkDb(pooled, stack.databaseUrl, SCHEMA)).rejects.toThrow(/not pool_test: .*ALTER ROLE .* SET search_path = pool_test/);
      await expect(checkDb(db, stack.databaseUrl, SCHEMA)).resolves.toBeUndefined();
    } finally {
      await pooled.end({ timeout: 1 });
    }
  });

  it("when a transaction commits ahead, then its statements run in order inside it, and one that fails rolls them all back", async () => {
    await db.sql.unsafe(`create table if not exists ${SCHEMA}.ahead (n int primary key)`);
    const seen = await db.tx(
      async (t) => {
        const [, counted] = await Promise.all([
          t`insert into ahead (n) values (1)`.execute(),
          t<{ c: number }[]>`select count(*)::int as c from ahead`.execute(),
        ]);
        return counted[0]?.c;
      },
      { commitAhead: true },
    );
    expect(seen).toBe(1);
    const failed = db.tx(
      async (t) => {
        await Promise.all([t`insert into ahead (n) values (2)`.execute(), t`insert into ahead (n) values (1)`.execute()]);
      },
      { commitAhead: true },
    );
    await expect(failed).rejects.toMatchObject({ code: "23505" });
    expect((await db.sql<{ n: number }[]>`select n from ahead order by n`).map((r) => r.n)).toEqual([1]);
    // Every connection of the pool is out of any transaction afterwards.
    const states = await Promise.all(Array.from({ length: 8 }, () => db.tx((t) => t<{ s: string }[]>`select to_char(now(), 'US') as s`)));
    expect(states).toHaveLength(8);
  });

  it("when two transactions deadlock, then the loser is retried and both commit", async () => {
    await db.sql.unsafe(`create table if not exists ${SCHEMA}.pair (id int primary key, v int)`);
    await db.sql.unsafe(`insert into ${SCHEMA}.pair values (1, 0), (2, 0) on conflict do nothing`);
    let attempts = 0;
    // Each locks one row, waits until the other holds its row too, then asks for the other's row.
    let held = 0;
    let bothHold = () => {};
    const both = new Promise<void>((resolve) => (bothHold = resolve));
    // The loser's retry waits for the winner's commit: on a busy machine a retry started at once
    // can take its first row back before the woken winner does, and deadlock a second time.
    let oneCommitted = () => {};
    const committed = new Promise<void>((resolve) => (oneCommitted = resolve));
    const cross = (first: number, second: number) =>
      db
        .tx(async (t) => {
          if (++attempts > 2) await committed;
          await t`update pair set v = v + 1 where id = ${first}`;
          if (++held === 2) bothHold();
          await both;
          await t`update pair set v = v + 1 where id = ${second}`;
        })
        .then(oneCommitted);
    await Promise.all([cross(1, 2), cross(2, 1)]);
    const rows = await db.sql<{ v: number }[]>`select v from pair order by id`;
    expect(rows.map((r) => r.v)).toEqual([2, 2]);
    expect(attempts).toBe(3);
  });

  // Transaction pooling sends no session settings (no read-only default, no search_path): the
  // storm then tests the one-connection-per-instance guard alone, on schema-qualified names.
  it.each(["session", "transaction"] as const)(
    "when the server drops every connection again and again under load (%s pooling), then no transaction commits in part, none acknowledged is lost, and every connection works afterwards",
    async (poolMode) => {
      // Its own schema, so its connections' application_name (tasksvc-<schema>-…) singles them out.
      const STORM = `pool_storm_${poolMode}`;
      const app = `tasksvc-${STORM}`;
      const storm = createDb({ url: stack.databaseUrl, schema: STORM, max: 8, txMax: 4, poolMode });
      const killer = createDb({ url: stack.databaseUrl, schema: STORM, max: 2, txMax: 1 });
      const uncaught: unknown[] = [];
      const onError = (e: unknown) => uncaught.push(e);
      process.on("unhandledRejection", onError);
      process.on("uncaughtException", onError);
      try {
        // Each transaction writes a pair: a row in `halves` alone would be a partial commit.
        await killer.sql.unsafe(`create schema if not exists ${STORM}`);
        await killer.sql.unsafe(`create table if not exists ${STORM}.halves (n int primary key)`);
        await killer.sql.unsafe(`create table if not exists ${STORM}.wholes (n int primary key)`);
        const acknowledged: number[] = [];
        const failures = new Set<string>();
        let next = 1_000_000;
        const until = Date.now() + 2500;
        const worker = async () => {
          while (Date.now() < until) {
            const n = next++;
            try {
              await storm.tx(async (t) => {
                await t`insert into ${t(STORM)}.halves (n) values (${n})`;
                await t`select pg_sleep(0.002)`;
                await t`insert into ${t(STORM)}.wholes (n) values (${n})`;
              });
              acknowledged.push(n);
            } catch (e) {
              failures.add(String((e as { code?: string }).code ?? e));
            }
          }
        };
        const kill = async () => {
          while (Date.now() < until) {
            await killer.sql`select pg_terminate_backend(pid) from pg_stat_activity where application_name like ${`${app}-%`} and pid <> pg_backend_pid()`;
            // The storm's pace, not a wait for anything: a round of terminations every 100 ms.
            await new Promise((r) => setTimeout(r, 100));
          }
        };
        await Promise.all([...Array.from({ length: 8 }, worker), kill()]);

        const halves = new Set((await killer.sql<{ n: number }[]>`select n from halves`).map((r) => r.n));
        const wholes = new Set((await killer.sql<{ n: number }[]>`select n from wholes`).map((r) => r.n));
        const partial = [...halves].filter((n) => !wholes.has(n)).length;
        const lost = acknowledged.filter((n) => !wholes.has(n)).length;
        console.log(
          `pool under terminations (${poolMode} pooling): acknowledged ${acknowledged.length}, lost ${lost}, partial commits ${partial}, failures ${[...failures].join(", ")}`,
        );
        expect(partial).toBe(0);
        expect(lost).toBe(0);
        expect(acknowledged.length).toBeGreaterThan(0);
        // Only connection failures, which callers see as 503 (never a wedge or a driver crash).
        for (const f of failures) expect(["CONNECTION_CLOSED", "57P01", "CONNECTION_DESTROYED", "ECONNRESET"], f).toContain(f);
        // Every transaction connection serves again: as many at once as there are, within a deadline
        // (a race, not a sleep: a wedged pool never answers, so no condition could be polled).
        const after = await Promise.race([
          Promise.all(Array.from({ length: 8 }, () => storm.tx((t) => t`select 1 as ok`))),
          new Promise<"wedged">((r) => setTimeout(() => r("wedged"), 5000)),
        ]);
        expect(after).not.toBe("wedged");
        expect(uncaught).toEqual([]);
      } finally {
        process.off("unhandledRejection", onError);
        process.off("uncaughtException", onError);
        await storm.end({ timeout: 1 });
        await killer.sql.unsafe(`drop schema if exists ${STORM} cascade`);
        await killer.end({ timeout: 1 });
      }
    },
  );
});
