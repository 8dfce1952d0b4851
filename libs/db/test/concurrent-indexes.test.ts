import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { createLogger } from "@tasksvc/logger";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { migrate } from "../src/index.js";

// Indexes built after the migrations with CREATE INDEX CONCURRENTLY, in a schema of this file's
// own on the stack's database.
const stack = inject("stack");
const SCHEMA = `ix_${randomUUID().slice(0, 8)}`;
const dir = mkdtempSync(join(tmpdir(), "ix-migrations-"));
writeFileSync(join(dir, "0001_items.sql"), "-- Up Migration\ncreate table items (id bigint primary key, label text not null);\n");
const log = createLogger({ service: "ix-test", level: "silent" });
const indexes = [{ name: "items_label_idx", definition: "on items (label)" }];
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });

afterAll(async () => {
  await sql.unsafe(`drop schema if exists ${SCHEMA} cascade`);
  await sql.end({ timeout: 1 });
  rmSync(dir, { recursive: true, force: true });
});

const state = async () =>
  sql<{ valid: boolean; ready: boolean }[]>`
    select i.indisvalid as valid, i.indisready as ready from pg_index i join pg_class c on c.oid = i.indexrelid
    join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${SCHEMA} and c.relname = 'items_label_idx'`;

describe("indexes built concurrently after the migrations", () => {
  it("when a service migrates, then its indexes exist and are valid; a second start leaves them alone", async () => {
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir, log, indexes });
    expect(await state()).toEqual([{ valid: true, ready: true }]);
    const oid = async () => (await sql<{ oid: number }[]>`select ${`${SCHEMA}.items_label_idx`}::regclass::oid::int as oid`)[0]?.oid;
    const first = await oid();
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir, log, indexes });
    expect(await oid()).toBe(first);
  });

  it("when a build was interrupted (the index left invalid), then the next start drops it and builds it again", async () => {
    // What an interrupted CREATE INDEX CONCURRENTLY leaves behind: the index, marked invalid.
    await sql`update pg_index set indisvalid = false where indexrelid = ${`${SCHEMA}.items_label_idx`}::regclass`;
    expect(await state()).toEqual([{ valid: false, ready: true }]);
    await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir, log, indexes });
    expect(await state()).toEqual([{ valid: true, ready: true }]);
  });

  it("when two replicas start at once, then both come up and the index is built once", async () => {
    await sql.unsafe(`drop index ${SCHEMA}.items_label_idx`);
    await Promise.all([
      migrate({ url: stack.databaseUrl, schema: SCHEMA, dir, log, indexes }),
      migrate({ url: stack.databaseUrl, schema: SCHEMA, dir, log, indexes }),
    ]);
    // The replica that did not get the lock went on at once; the index is the other's.
    expect((await state()).length).toBe(1);
  });
});
