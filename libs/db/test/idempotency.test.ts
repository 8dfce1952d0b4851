import { AppError, isAppError } from "@tasksvc/errors";
import { eventually } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, idempotencyRecords, idempotentWrite, KeyRecordedMeanwhile, type Sql } from "../src/index.js";

// The records helper against a schema of its own holding the table every service declares.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "idempotency_test", max: 4, txMax: 2 });
const sql = db.sql;
const records = idempotencyRecords(sql);

beforeAll(async () => {
  await sql`create schema if not exists idempotency_test`;
  await sql`create table names (name text primary key)`;
  await sql`create table idempotency (credential_id text not null, key text not null, operation text not null, result jsonb not null,
    created_at timestamptz not null default now(), primary key (credential_id, key))`;
});
afterAll(async () => {
  await sql`drop schema idempotency_test cascade`;
  await db.end({ timeout: 1 });
});

describe("service idempotency records", () => {
  it("when a key is recorded, then it replays its result, refuses another operation with 422, and a second record loses", async () => {
    expect(await records.replay("key_a", undefined, "op")).toBeUndefined();
    await records.recordOnce("key_a", undefined, "op", { n: 0 }); // no key, nothing stored
    expect(await records.replay("key_a", "k1", "op")).toBeUndefined();
    await records.recordOnce("key_a", "k1", "op", { n: 1 });
    expect(await records.replay("key_a", "k1", "op")).toEqual({ n: 1 });
    expect(await records.replay("key_b", "k1", "op")).toBeUndefined(); // scoped to the credential
    const reused = await records.replay("key_a", "k1", "other").catch((e: unknown) => e);
    expect(isAppError(reused) && reused.code).toBe("idempotency_key_reused");
    await expect(records.recordOnce("key_a", "k1", "op", { n: 2 })).rejects.toBeInstanceOf(KeyRecordedMeanwhile);
    expect(await records.replay("key_a", "k1", "op")).toEqual({ n: 1 });
  });

  it("when a record is past 24 hours, then it replays nothing and the key can be recorded again", async () => {
    await sql`insert into idempotency (credential_id, key, operation, result, created_at) values ('key_old', 'k', 'op', '{"n":1}', now() - interval '25 hours')`;
    expect(await records.replay("key_old", "k", "op")).toBeUndefined();
    await records.recordOnce("key_old", "k", "op", { n: 2 });
    expect(await records.replay("key_old", "k", "op")).toEqual({ n: 2 });
    await sql`update idempotency set created_at = now() - interval '25 hours' where credential_id = 'key_old'`;
    expect(await records.replayOrDropExpired("key_old", "k", "op")).toBeUndefined();
    expect((await sql`select 1 from idempotency where credential_id = 'key_old'`).length).toBe(0);
    // A live record is replayed by the same call, and left in place.
    await records.recordOnce("key_old", "k", "op", { n: 3 });
    expect(await records.replayOrDropExpired("key_old", "k", "op")).toEqual({ n: 3 });
    const reused = await records.replayOrDropExpired("key_old", "k", "other").catch((e: unknown) => e);
    expect(isAppError(reused) && reused.code).toBe("idempotency_key_reused");
  });

  it("when a retry of a keyed write runs while its first attempt is still in flight, then it waits and answers the first one's result, not a 400 from the twin's checks", async () => {
    // The work of the write: a name that must be unique (like a project's), then the record.
    let started!: () => void;
    const firstStarted = new Promise<void>((r) => (started = r));
    let finish!: () => void;
    const firstMayFinish = new Promise<void>((r) => (finish = r));
    const pids: Record<string, number> = {};
    const write = (attempt: string, hold: boolean) =>
      db.tx(async (t) => {
        const [session] = await t<{ pid: number }[]>`select pg_backend_pid() as pid`;
        if (session) pids[attempt] = session.pid;
        const r = idempotencyRecords(t as never);
        const twin = await r.replayLocked<{ attempt: string }>("key_twin", "k", "createName");
        if (twin) return twin;
        if (hold) {
          started();
          await firstMayFinish;
        }
        await t`insert into names (name) values ('launch')`;
        const out = { attempt };
        await r.recordOnce("key_twin", "k", "createName", out);
        return out;
      });
    const first = write("first", true);
    await firstStarted;
    let retrySettled = false;
    const retry = write("retry", false).finally(() => {
      retrySettled = true;
    });
    // The retry must be waiting on the first's lock (not refused, not done): let the first commit only now.
    await eventually(
      async () =>
        pids["retry"] !== undefined && (await sql`select 1 from pg_locks where pid = ${pids["retry"]} and locktype = 'advisory' and not granted`).length > 0,
      { intervalMs: 10, what: "the retry to wait for the first attempt's lock" },
    );
    expect(retrySettled).toBe(false);
    finish();
    expect(await first).toEqual({ attempt: "first" });
    expect(await retry).toEqual({ attempt: "first" });
    expect((await sql`select count(*)::int as n from names`)[0]?.n).toBe(1);
  });
});

// idempotentWrite as a service calls it: a repository bound to the transaction, `names` as the
// write's own table (a name is unique, like a project's), every step counted.
const repoOf = (t: Sql) => ({ idempotency: idempotencyRecords(t), sql: t });
type Repo = ReturnType<typeof repoOf>;

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A write that inserts `name` and answers it, with what ran counted. */
function harness(credentialId: string) {
  const seen = { tx: 0, prepare: 0, work: 0, afterCommit: 0, pids: [] as number[] };
  const tx = <U>(fn: (r: Repo) => Promise<U>) =>
    db.tx(async (t) => {
      seen.tx++;
      const [row] = await t<{ pid: number }[]>`select pg_backend_pid() as pid`;
      if (row) seen.pids.push(row.pid);
      return fn(repoOf(t as unknown as Sql));
    });
  const write = (key: string | undefined, name: string, opts: { operation?: string; before?: (r: Repo) => Promise<void> } = {}) =>
    idempotentWrite({
      records,
      tx,
      credentialId,
      key,
      operation: opts.operation ?? "createName",
      async prepare() {
        seen.prepare++;
        return { name };
      },
      async work(r, prepared) {
        seen.work++;
        await opts.before?.(r);
        await r.sql`insert into names (name) values (${prepared.name})`;
        return { name: prepared.name };
      },
      afterCommit: () => void seen.afterCommit++,
    });
  return { seen, tx, write };
}

const namesLike = async (prefix: string) =>
  (await sql<{ name: string }[]>`select name from names where name like ${`${prefix}%`} order by name`).map((r) => r.name);
const recordOf = async (credentialId: string) =>
  sql<{ key: string; operation: string; result: unknown }[]>`select key, operation, result from idempotency where credential_id = ${credentialId}`;

describe("idempotentWrite", () => {
  it("when a keyed write is repeated, then the repeat answers the stored result before any check, transaction or work", async () => {
    const h = harness("cred_replay");
    expect(await h.write("k", "replay-1")).toEqual({ name: "replay-1" });
    expect(h.seen).toMatchObject({ tx: 1, prepare: 1, work: 1, afterCommit: 1 });
    expect(await recordOf("cred_replay")).toEqual([{ key: "k", operation: "createName", result: { name: "replay-1" } }]);

    expect(await h.write("k", "replay-2")).toEqual({ name: "replay-1" });
    expect(h.seen).toMatchObject({ tx: 1, prepare: 1, work: 1, afterCommit: 1 });
    expect(await namesLike("replay-")).toEqual(["replay-1"]);
  });

  it("when a twin execution of the key is still in its transaction, then the other waits for it and answers its result, running no work", async () => {
    const h = harness("cred_twin");
    const started = deferred();
    const release = deferred();
    const first = h.write("k", "twin-first", {
      before: async () => {
        started.resolve();
        await release.promise;
      },
    });
    await started.promise;
    const second = h.write("k", "twin-second");
    // The second must be waiting on the first's lock (not refused by the unique name, not done).
    await eventually(
      async () => {
        const pid = h.seen.pids[1];
        expect(
          pid !== undefined && (await sql`select 1 from pg_locks where pid = ${pid} and locktype = 'advisory' and not granted`).length,
          JSON.stringify(h.seen),
        ).toBe(1);
      },
      { intervalMs: 10, what: "the second execution to wait for the first's lock" },
    );
    release.resolve();
    expect(await first).toEqual({ name: "twin-first" });
    expect(await second).toEqual({ name: "twin-first" });
    expect(h.seen).toMatchObject({ tx: 2, work: 1, afterCommit: 1 });
    expect(await namesLike("twin-")).toEqual(["twin-first"]);
  });

  it("when another execution records the key while the work runs (KeyRecordedMeanwhile), then the work is rolled back and the stored result answers", async () => {
    const h = harness("cred_meanwhile");
    // An execution that takes no lock: a statement that records the key itself, committed at once.
    const other = (_r: Repo) => records.recordOnce("cred_meanwhile", "k", "createName", { name: "by-the-other" });
    expect(await h.write("k", "meanwhile-mine", { before: other })).toEqual({ name: "by-the-other" });
    expect(h.seen).toMatchObject({ tx: 1, work: 1, afterCommit: 0 });
    expect(await namesLike("meanwhile-")).toEqual([]);
    expect(await recordOf("cred_meanwhile")).toEqual([{ key: "k", operation: "createName", result: { name: "by-the-other" } }]);
  });

  it("when the key was used for another operation, then it is 422 idempotency_key_reused and nothing runs", async () => {
    const h = harness("cred_reused");
    await h.write("k", "reused-1", { operation: "createName" });
    const e = await h.write("k", "reused-2", { operation: "renameName" }).catch((err: unknown) => err);
    expect(isAppError(e) && [e.code, e.status, e.detail]).toEqual([
      "idempotency_key_reused",
      422,
      "This Idempotency-Key was already used for a different request.",
    ]);
    expect(h.seen).toMatchObject({ tx: 1, prepare: 1, work: 1 });
    expect(await namesLike("reused-")).toEqual(["reused-1"]);
  });

  it("when the request has no key, then the work runs every time in its transaction and nothing is recorded", async () => {
    const h = harness("cred_nokey");
    expect(await h.write(undefined, "nokey-1")).toEqual({ name: "nokey-1" });
    expect(await h.write(undefined, "nokey-2")).toEqual({ name: "nokey-2" });
    expect(h.seen).toMatchObject({ tx: 2, prepare: 2, work: 2, afterCommit: 2 });
    expect(await namesLike("nokey-")).toEqual(["nokey-1", "nokey-2"]);
    expect(await recordOf("cred_nokey")).toEqual([]);
  });

  it("when the work fails, then its error is the answer, nothing of it or of the key is stored, and a retry with the key runs again", async () => {
    const h = harness("cred_fail");
    const refused = new AppError("validation_failed", "/name refused");
    const failure = await h
      .write("k", "fail-1", {
        before: async (r) => {
          await r.sql`insert into names (name) values ('fail-0')`;
          throw refused;
        },
      })
      .catch((e: unknown) => e);
    expect(failure).toBe(refused);
    expect(await recordOf("cred_fail")).toEqual([]);
    expect(await namesLike("fail-")).toEqual([]);
    expect(h.seen.afterCommit).toBe(0);
    expect(await h.write("k", "fail-2")).toEqual({ name: "fail-2" });
    expect(await namesLike("fail-")).toEqual(["fail-2"]);
  });

  it("when a check before the transaction fails, then no transaction starts and nothing is recorded", async () => {
    const tx = <U>(fn: (r: Repo) => Promise<U>) => db.tx((t) => fn(repoOf(t as unknown as Sql)));
    const notFound = new AppError("resource_not_found", "No task with that id exists in this organization.");
    let transactions = 0;
    const failure = await idempotentWrite({
      records,
      tx: (fn) => {
        transactions++;
        return tx(fn);
      },
      credentialId: "cred_prepare",
      key: "k",
      operation: "createName",
      prepare: () => Promise.reject(notFound),
      work: async () => ({ never: true }),
    }).catch((e: unknown) => e);
    expect(failure).toBe(notFound);
    expect(transactions).toBe(0);
    expect(await recordOf("cred_prepare")).toEqual([]);
  });
});

describe("replayRecordedMeanwhile", () => {
  it("when the error is not KeyRecordedMeanwhile, then it is rethrown as it is", async () => {
    const boom = new Error("boom");
    await expect(records.replayRecordedMeanwhile(boom, "cred_rrm", "k", "op")).rejects.toBe(boom);
  });

  it("when the key's record cannot be read back, then it is a 500 internal_error, not a second run", async () => {
    const e = await records.replayRecordedMeanwhile(new KeyRecordedMeanwhile(), "cred_rrm", "missing", "op").catch((err: unknown) => err);
    expect(isAppError(e) && [e.code, e.status]).toEqual(["internal_error", 500]);
  });
});
