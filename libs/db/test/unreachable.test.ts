import net from "node:net";
import { eventually } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, type Database, databaseErrorAsAppError, ensureDatabase, isConnectionError, quoteIdent } from "../src/index.js";

const stack = inject("stack");
const SCHEMA = "unreachable_test";

type Mode = "close" | "silent" | "forward";

/**
 * A TCP endpoint standing in for the database's address during a failover: `close` accepts and
 * closes at once (a proxy or virtual IP with no primary behind it), `silent` accepts and never
 * answers (a host that went away), `forward` passes bytes to the real Postgres (the primary is back).
 * Switching mode cuts every connection open through it, as a failover does.
 */
async function endpoint(target: URL) {
  let mode: Mode = "forward";
  let accepted = 0;
  const open = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    open.add(s);
    s.on("close", () => open.delete(s));
    s.on("error", () => undefined);
  };
  const server = net.createServer((client) => {
    track(client);
    accepted++;
    if (mode === "close") return void client.destroy();
    if (mode === "silent") return;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    track(upstream);
    client.pipe(upstream).on("close", () => client.destroy());
    upstream.pipe(client).on("close", () => upstream.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the endpoint has no TCP address");
  const url = new URL(target.toString());
  url.hostname = "127.0.0.1";
  url.port = String(address.port);
  return {
    url: url.toString(),
    /** Connections accepted so far. */
    accepted: () => accepted,
    set(next: Mode) {
      mode = next;
      for (const s of open) s.destroy();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const failureOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

/** What a promise came to within `ms`: "hung" if it did not settle (a race, not a sleep). */
async function within<T>(p: Promise<T>, ms: number): Promise<{ value: T } | { error: unknown } | "hung"> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<"hung">((resolve) => {
    timer = setTimeout(() => resolve("hung"), ms);
  });
  try {
    return await Promise.race([
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      hung,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

describe("a database endpoint that is unreachable for a while (a failover)", () => {
  let admin: Database;
  let proxy: Awaited<ReturnType<typeof endpoint>>;
  let db: Database;

  beforeAll(async () => {
    admin = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 2, txMax: 1 });
    await admin.sql.unsafe(`create schema if not exists ${SCHEMA}`);
    await admin.sql.unsafe(`create table if not exists ${SCHEMA}.written (n int primary key)`);
    proxy = await endpoint(new URL(stack.databaseUrl));
    // The statement limit a service runs with (3 s by default); also the longest wait for a slot.
    db = createDb({ url: proxy.url, schema: SCHEMA, max: 4, txMax: 2, statementTimeoutMs: 3000 });
  });
  afterAll(async () => {
    await db?.end({ timeout: 1 });
    await proxy?.close();
    await admin?.sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
    await admin?.end({ timeout: 1 });
  });

  const insert = (n: number) =>
    db.tx(
      async (t) => {
        await t`insert into written (n) values (${n})`;
      },
      { attempts: 1 },
    );

  it.each(["close", "silent"] as const)(
    "when the endpoint %s connections, then every transaction and statement fails as a connection error (a 503) within its deadline, and all work again once the database is back",
    async (down) => {
      await insert(down === "close" ? 1 : 2);
      proxy.set(down);
      // More transactions than slots: the last ones wait for a slot, which must end too.
      const attempts: Promise<unknown>[] = [...Array.from({ length: 5 }, (_, i) => insert(100 + i)), db.sql`select 1 as one`.execute()];
      // connect_timeout (5 s) bounds the longest of them, plus a slot's wait (3 s) behind one.
      const began = performance.now();
      let slowest = 0;
      const outcomes = await Promise.all(
        attempts.map((p) =>
          within(
            p.finally(() => {
              slowest = Math.max(slowest, performance.now() - began);
            }),
            12_000,
          ),
        ),
      );
      console.log(`endpoint ${down}: the last of 5 transactions (2 slots) and a statement failed after ${(slowest / 1000).toFixed(2)} s`);
      for (const o of outcomes) {
        expect(o, "a transaction or statement hung while the endpoint was down").not.toBe("hung");
        if (o !== "hung" && "error" in o) {
          expect(isConnectionError(o.error), String(o.error)).toBe(true);
          expect(databaseErrorAsAppError(o.error)?.status).toBe(503);
        }
      }

      proxy.set("forward");
      // Both kinds of connection heal by themselves: no new createDb.
      const healed = performance.now();
      await eventually(
        async () => {
          await insert(down === "close" ? 3 : 4);
          return true;
        },
        { timeoutMs: 10_000, intervalMs: 50, what: "a transaction to commit through the endpoint again" },
      );
      await eventually(() => db.sql`select 1 as one`, { timeoutMs: 10_000, intervalMs: 50, what: "an autocommit statement to run again" });
      console.log(`endpoint ${down}: transactions and statements work again ${((performance.now() - healed) / 1000).toFixed(2)} s after it forwards`);
      // Every slot serves again, as many at once as there are.
      const all = await within(Promise.all(Array.from({ length: 4 }, () => db.tx((t) => t`select 1 as ok`))), 10_000);
      expect(all).not.toBe("hung");
      expect(all !== "hung" && "value" in all, JSON.stringify(all)).toBe(true);
    },
    40_000,
  );

  it("when a connection closes while it is still starting (the endpoint cut mid-startup), then the transaction fails and its slot serves the next one", async () => {
    // A pool of its own with one slot, so that its first transaction opens the slot's connection.
    const one = createDb({ url: proxy.url, schema: SCHEMA, max: 2, txMax: 1, statementTimeoutMs: 3000 });
    try {
      proxy.set("silent");
      const before = proxy.accepted();
      const first = failureOf(one.tx((t) => t`insert into written (n) values (200)`, { attempts: 1 }));
      // The connection attempt is open and waiting for the server's answer; then the failover cuts it.
      await eventually(() => proxy.accepted() > before, { what: "the transaction's connection attempt to reach the endpoint" });
      proxy.set("close");
      const outcome = await within(first, 10_000);
      expect(outcome, "the transaction hung on a connection closed during its start-up").not.toBe("hung");
      expect(outcome !== "hung" && "value" in outcome && isConnectionError(outcome.value), JSON.stringify(outcome)).toBe(true);
      proxy.set("forward");
      const next = await within(
        one.tx((t) => t`insert into written (n) values (201)`),
        10_000,
      );
      expect(next, "the next transaction waited for ever for the slot").not.toBe("hung");
      expect(next !== "hung" && "value" in next, JSON.stringify(next)).toBe(true);
    } finally {
      await one.end({ timeout: 1 });
    }
  });
});

describe("a database whose sessions refuse writes (the URL reaches a node that is not the primary)", () => {
  // A scratch database made read-only by default, as a standby's sessions are: cheap to make and
  // to undo, and the server answers writes there with the same 25006 a standby does.
  const name = `unreachable_ro_${process.pid}`;
  const roUrl = (() => {
    const u = new URL(stack.databaseUrl);
    u.pathname = `/${name}`;
    return u.toString();
  })();
  let admin: Database;

  beforeAll(async () => {
    admin = createDb({ url: stack.databaseUrl, schema: "public", max: 2, txMax: 1 });
    await ensureDatabase(roUrl);
    const setup = createDb({ url: roUrl, schema: "public", max: 2, txMax: 1 });
    await setup.sql`create table if not exists ro (n int primary key)`;
    await setup.end({ timeout: 1 });
    await admin.sql.unsafe(`alter database ${quoteIdent(name)} set default_transaction_read_only = on`);
  });
  afterAll(async () => {
    await admin?.sql.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
    await admin?.end({ timeout: 1 });
  });

  it("when a write is refused as read-only (25006), then it is a 503 with Retry-After, and once writes are allowed again the pool writes without a new createDb", async () => {
    const db = createDb({ url: roUrl, schema: "public", max: 3, txMax: 1 });
    // Behind a pooler in transaction mode no session is checked as it opens: the write reaches
    // the server and is refused there.
    const pooled = createDb({ url: roUrl, schema: "public", max: 2, txMax: 1, poolMode: "transaction" });
    try {
      const refused = await failureOf(pooled.sql`insert into public.ro (n) values (1)`);
      expect((refused as { code?: string } | undefined)?.code).toBe("25006");
      const mapped = databaseErrorAsAppError(refused);
      expect([mapped?.status, mapped?.retryAfter], String(refused)).toEqual([503, 1]);

      // Its own connections refuse a read-only session as they open: a connection error, a 503.
      const early = await failureOf(db.sql`insert into ro (n) values (2)`);
      expect(isConnectionError(early), String(early)).toBe(true);
      expect(databaseErrorAsAppError(early)?.status).toBe(503);

      await admin.sql.unsafe(`alter database ${quoteIdent(name)} reset default_transaction_read_only`);
      await eventually(() => db.sql`insert into ro (n) values (3) on conflict do nothing`, { what: "an autocommit write to succeed again" });
      await db.tx((t) => t`insert into ro (n) values (4)`);
      expect((await db.sql<{ n: number }[]>`select n from ro order by n`).map((r) => r.n)).toEqual([3, 4]);
    } finally {
      await db.end({ timeout: 1 });
      await pooled.end({ timeout: 1 });
    }
  });
});
