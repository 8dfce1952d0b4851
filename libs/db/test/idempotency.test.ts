import { isAppError } from "@tasksvc/errors";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { createDb, idempotencyRecords, KeyRecordedMeanwhile } from "../src/index.js";

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
    await records.dropExpired("key_old", "k");
    expect((await sql`select 1 from idempotency where credential_id = 'key_old'`).length).toBe(0);
  });

  it("when a retry of a keyed write runs while its first attempt is still in flight, then it waits and answers the first one's result, not a 400 from the twin's checks", async () => {
    // The work of the write: a name that must be unique (like a project's), then the record.
    let started!: () => void;
    const firstStarted = new Promise<void>((r) => (started = r));
    let finish!: () => void;
    const firstMayFinish = new Promise<void>((r) => (finish = r));
    const write = (attempt: string, hold: boolean) =>
      db.tx(async (t) => {
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
    const retry = write("retry", false);
    // The retry must be waiting on the first (not refused): let the first commit only now.
    const early = await Promise.race([retry.then(() => "answered", () => "failed"), new Promise((r) => setTimeout(() => r("waiting"), 200))]);
    expect(early).toBe("waiting");
    finish();
    expect(await first).toEqual({ attempt: "first" });
    expect(await retry).toEqual({ attempt: "first" });
    expect((await sql`select count(*)::int as n from names`)[0]?.n).toBe(1);
  });
});
