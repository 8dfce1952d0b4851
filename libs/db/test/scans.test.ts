import { isAppError } from "@tasksvc/errors";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { cancelAt, createDb, type Database, isStatementCancelled, scanGate } from "../src/index.js";

// One tenant's scans must not take every connection, nor outlive their caller: a fair share per
// organization, a statement time limit on every connection, and a cancel at the caller's deadline.
const stack = inject("stack");
const SCHEMA = "scans_test";

let db: Database;
beforeAll(async () => {
  db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 8, txMax: 2, statementTimeoutMs: 1500 });
});
afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** Settles to "ok", or the AppError code / Postgres SQLSTATE it failed with. */
const outcome = (p: Promise<unknown>): Promise<string> =>
  p.then(
    () => "ok",
    (e: unknown) => (isAppError(e) ? e.code : String((e as { code?: unknown }).code)),
  );

/** Backends of this pool still running a statement (their pg_sleep). */
async function sleeping(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity
    where query like 'select pg_sleep%' and state = 'active' and pid <> pg_backend_pid()
      and application_name like ${`tasksvc-${SCHEMA}-%`}`;
  return row?.n ?? 0;
}

describe("the statement time limit", () => {
  it("when a statement runs past DATABASE_STATEMENT_TIMEOUT, then the server stops it (57014) on both kinds of connection", async () => {
    const auto = await outcome(db.sql`select pg_sleep(5)`.execute());
    const inTx = await outcome(db.tx((t) => t`select pg_sleep(5)`.execute(), { attempts: 1 }));
    expect(auto).toBe("57014");
    expect(inTx).toBe("57014");
    // The pool still answers after both.
    expect(await db.sql`select 1 as one`).toEqual([{ one: 1 }]);
  });

  it("when the caller's deadline comes first, then cancelAt stops the statement then, and nothing of it runs on", async () => {
    const e = await cancelAt(db.sql`select pg_sleep(5)`, Date.now() + 200).catch((err: unknown) => err);
    expect(isStatementCancelled(e), String(e)).toBe(true);
    // Our cancel request, not the server's 1.5 s limit.
    expect(String((e as Error).message)).toContain("user request");
    expect(await sleeping()).toBe(0);
  });

  it("when the deadline has already passed, then the statement is not sent at all", async () => {
    const e = await cancelAt(db.sql`select pg_sleep(5)`, Date.now() - 1).catch((err: unknown) => err);
    expect(isStatementCancelled(e)).toBe(true);
  });
});

describe("scanGate", () => {
  it("when one organization holds its share, then its next scan waits and is refused with 429, while another organization's scan runs at once", async () => {
    const gate = scanGate({ service: "scans-test", connections: db.connections, maxWaitMs: 300 });
    expect(gate.perOrg).toBe(2);
    const what = { operation: "search", narrow: "narrow it" };
    const slow = (until: number | undefined) => cancelAt(db.sql`select pg_sleep(0.8)`, until);
    let a1Done = false;
    const a1 = outcome(gate.run("org_a", undefined, what, slow)).finally(() => {
      a1Done = true;
    });
    const a2 = outcome(gate.run("org_a", undefined, what, slow));
    // The third scan of org_a finds both of its places taken: it waits 300 ms, then 429.
    const a3 = gate.run("org_a", undefined, what, slow).catch((e: unknown) => e);
    expect(await outcome(gate.run("org_b", undefined, what, async (until) => cancelAt(db.sql`select 1`, until)))).toBe("ok");
    expect(a1Done, "org_b's scan waited for org_a's").toBe(false);
    const refused = await a3;
    expect(isAppError(refused) && refused.code).toBe("rate_limited");
    expect(isAppError(refused) && refused.retryAfter).toBe(1);
    expect(await a1).toBe("ok");
    expect(await a2).toBe("ok");
  });

  it("when an operator set an organization's own share, then that many of its scans run at once, never more than the connections", async () => {
    const gate = scanGate({ service: "scans-test", connections: 4, maxWaitMs: 2000 });
    expect(gate.perOrg).toBe(1);
    const what = { operation: "list", narrow: "narrow it" };
    const slow = (until: number | undefined) => cancelAt(db.sql`select pg_sleep(0.6)`, until);
    // Three of org_s at its share of 3 sleep together, while org_t's fair share of 1 holds its second back.
    const runs = [1, 2, 3].map(() => outcome(gate.run("org_s", undefined, what, slow, 3)));
    const fair = [1, 2].map(() => outcome(gate.run("org_t", undefined, what, slow)));
    await expect.poll(sleeping, { timeout: 2000, interval: 25 }).toBe(4);
    await new Promise((r) => setTimeout(r, 150));
    expect(await sleeping()).toBe(4);
    expect(await Promise.all([...runs, ...fair])).toEqual(["ok", "ok", "ok", "ok", "ok"]);
    // A share above the replica's connections is the connections.
    const capped = [1, 2, 3, 4, 5].map(() => outcome(gate.run("org_u", undefined, what, slow, 50)));
    await expect.poll(sleeping, { timeout: 2000, interval: 25 }).toBe(4);
    await new Promise((r) => setTimeout(r, 150));
    expect(await sleeping()).toBe(4);
    expect(await Promise.all(capped)).toEqual(["ok", "ok", "ok", "ok", "ok"]);
  });

  it("when a place frees within the wait, then the waiting scan of the same organization takes it", async () => {
    const gate = scanGate({ service: "scans-test", connections: 4, maxWaitMs: 3000 });
    expect(gate.perOrg).toBe(1);
    const what = { operation: "list", narrow: "narrow it" };
    const first = outcome(gate.run("org_c", undefined, what, (until) => cancelAt(db.sql`select pg_sleep(0.2)`, until)));
    const second = outcome(gate.run("org_c", undefined, what, (until) => cancelAt(db.sql`select 1`, until)));
    expect(await Promise.all([first, second])).toEqual(["ok", "ok"]);
  });

  it("when more scans of one organization wait than the queue holds, then the excess is refused at once", async () => {
    const gate = scanGate({ service: "scans-test", connections: 4, maxWaitMs: 2000, maxQueued: 2 });
    const what = { operation: "list", narrow: "narrow it" };
    let heldDone = false;
    const held = outcome(gate.run("org_d", undefined, what, (until) => cancelAt(db.sql`select pg_sleep(0.5)`, until))).finally(() => {
      heldDone = true;
    });
    const waiting = [1, 2].map(() => outcome(gate.run("org_d", undefined, what, (until) => cancelAt(db.sql`select 1`, until))));
    expect(await outcome(gate.run("org_d", undefined, what, (until) => cancelAt(db.sql`select 1`, until)))).toBe("rate_limited");
    expect(heldDone, "the excess scan was refused only after waiting").toBe(false);
    expect(await Promise.all([held, ...waiting])).toEqual(["ok", "ok", "ok"]);
  });

  it("when a scan reaches the time limit or its caller's deadline, then it answers query_too_expensive naming what to narrow", async () => {
    const gate = scanGate({ service: "scans-test", connections: db.connections });
    const what = { operation: "search", narrow: "use fewer full-text conditions" };
    const byLimit = await gate.run("org_e", undefined, what, (until) => cancelAt(db.sql`select pg_sleep(5)`, until)).catch((e: unknown) => e);
    const byDeadline = await gate.run("org_e", Date.now() + 150, what, (until) => cancelAt(db.sql`select pg_sleep(5)`, until)).catch((e: unknown) => e);
    for (const e of [byLimit, byDeadline]) {
      expect(isAppError(e) && e.code, String(e)).toBe("query_too_expensive");
      expect(isAppError(e) && e.status).toBe(400);
      expect(String((e as Error).message)).toContain("use fewer full-text conditions");
    }
    expect(await sleeping()).toBe(0);
    // Both places are free again: two scans of the same organization run at once.
    const quick = (until: number | undefined) => cancelAt(db.sql`select 1`, until);
    expect(await Promise.all([outcome(gate.run("org_e", undefined, what, quick)), outcome(gate.run("org_e", undefined, what, quick))])).toEqual(["ok", "ok"]);
  });
});
