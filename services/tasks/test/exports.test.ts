import { actorOf } from "@tasksvc/contracts";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { Objm } from "@nats-io/obj";
import { attachmentsBucket, natsBlobStore, type BlobStore } from "@tasksvc/blobs";
import type { Caller, ExportJob, RpcContext } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { connectNats, type NatsConnection } from "@tasksvc/nats";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { capabilities } from "../src/domain/attachments/capabilities.js";
import { exportFileKey, type ExportsOptions, exportsSystem } from "../src/domain/exports/system.js";
import { tasksResources } from "../src/domain/resources.js";
import { exportReads } from "../src/repo/export-reads.js";
import { repositories } from "../src/repo/repositories.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// An export's job against a schema and an object store bucket of its own (no tasks service runs on
// either): who runs it when a delivery comes again, what a stop or a failure leaves, and the sweep.
// The whole path through HTTP is test/e2e/exports.test.ts; a killed process, test/fault/export-kill.test.ts.
const stack = inject("stack");
const SCHEMA = "tasks_exports_test";
const BUCKET_NS = `${stack.namespace}_exp_test`;
const log = createLogger({ service: "exports-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 6, snapshots: 1 });
const sql = db.sql;
const caps = capabilities({ keys: [{ kid: "k1", key: randomBytes(32) }], lifetimeMs: { upload: 60_000, download: 60_000, export: 24 * 3600_000 } });
const LEASE_MS = 2000;
let nc: NatsConnection;
let store: BlobStore;
let dir: string;
const published: ExportJob[] = [];

const system = (over: Partial<ExportsOptions> = {}) =>
  exportsSystem(tasksResources(db, { log }), {
    store,
    caps,
    snapshot: (fn) => db.snapshot((t) => fn({ reads: exportReads(t), repos: repositories(t) })),
    emails: async (ids) => new Map(ids.map((id) => [id, `${id}@example.test`])),
    tmpDir: dir,
    publish: async (job) => void published.push(job),
    ttlMs: 24 * 3600_000,
    maxActive: 3,
    leaseMs: LEASE_MS,
    maxRuns: 3,
    heartbeatMs: 100,
    ...over,
  });

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  nc = await connectNats({ url: stack.natsUrl, name: "exports-test" });
  store = await natsBlobStore(nc, BUCKET_NS);
  dir = await mkdtemp(join(tmpdir(), "exports-test-"));
});

afterAll(async () => {
  await (await new Objm(nc).open(attachmentsBucket(BUCKET_NS))).destroy();
  await nc.drain();
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
  await rm(dir, { recursive: true, force: true });
});

/** An organization with `n` tasks, inserted directly: the tasks service's creates are not under test. */
async function organization(n = 3): Promise<string> {
  const org = newId("org");
  for (let i = 1; i <= n; i++) {
    await sql`insert into tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at)
      values (${org}, ${i}, 'usr_t', ${newId("ver")}, 1, ${`task ${i}`}, 'TODO', now(), now())`;
  }
  return org;
}

const caller = (org: string): Caller => {
  const ctx: RpcContext = { request_id: newId("req"), organization_id: org, user_id: "usr_t", credential_id: "key_t", scopes: ["tasks:read"], plan: "pro" };
  return { organizationId: org, userId: "usr_t", credentialId: "key_t", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
};
const row = async (id: string) => (await sql`select status, attempts, lease_until < now() as lapsed, file_key, error_code from exports where id = ${id}`)[0];
const never = new AbortController().signal;
const job = (org: string, id: string): ExportJob => ({ organization_id: org, export_id: id });
const text = async (key: string) => {
  const got = await store.get(key);
  if (!got) return null;
  const chunks: Buffer[] = [];
  for await (const c of got.body) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
};

describe("export jobs", () => {
  it("when a run's lease has passed (its process died), then the next delivery takes it over and writes the file once, over what the dead run stored", async () => {
    const org = await organization();
    const e = await system().create(caller(org), { format: "jsonl", include: ["tasks"] });
    expect(published).toContainEqual(job(org, e.id));
    // A run that stored its file and died before recording it.
    await sql`update exports set status = 'running', attempts = 1, lease_until = now() - interval '1 second' where id = ${e.id}`;
    const key = exportFileKey(org, e.id, "jsonl");
    await store.put(key, Readable.from([Buffer.from("stale\n")]), { size: 6, contentType: "application/x-ndjson" });
    expect(await system().run(job(org, e.id), () => undefined, never)).toBe("ack");
    expect(await row(e.id)).toMatchObject({ status: "succeeded", attempts: 2, file_key: key });
    const lines = (await text(key))?.trimEnd().split("\n") ?? [];
    expect(lines.map((l) => JSON.parse(l).object)).toEqual(["member", "task", "task", "task"]);
    const stored = [];
    for await (const o of store.list(`exp/${org}/`)) stored.push(o.key);
    expect(stored).toEqual([key]);
    // Delivered again once done: nothing more.
    expect(await system().run(job(org, e.id), () => undefined, never)).toBe("ack");
    expect((await row(e.id))?.["attempts"]).toBe(2);
    expect((await readdir(dir)).filter((f) => f.includes(e.id))).toEqual([]);
  });

  it("when another run holds the lease, or another export of the organization runs, then the delivery comes back later and nothing changes", async () => {
    const org = await organization();
    const held = await system().create(caller(org), { format: "jsonl" });
    const waiting = await system().create(caller(org), { format: "csv" });
    await sql`update exports set status = 'running', attempts = 1, lease_until = now() + interval '1 minute' where id = ${held.id}`;
    expect(await system().run(job(org, held.id), () => undefined, never)).toEqual({ nak: LEASE_MS });
    expect(await system().run(job(org, waiting.id), () => undefined, never)).toEqual({ nak: 15_000 });
    expect(await row(held.id)).toMatchObject({ status: "running", attempts: 1 });
    expect(await row(waiting.id)).toMatchObject({ status: "queued", attempts: 0 });
  });

  it("when the process stops during a run, then the run gives its lease up and the next delivery takes the export over at once", async () => {
    const org = await organization();
    const e = await system().create(caller(org), { format: "jsonl" });
    const stopping = new AbortController();
    stopping.abort();
    expect(await system().run(job(org, e.id), () => undefined, stopping.signal)).toEqual({ nak: 0 });
    expect(await row(e.id)).toMatchObject({ status: "running", attempts: 1, lapsed: true, file_key: null });
    expect(await system().run(job(org, e.id), () => undefined, never)).toBe("ack");
    expect(await row(e.id)).toMatchObject({ status: "succeeded", attempts: 2 });
  });

  it("when every run fails, then the export fails after the last allowed run, with its error, and no file stays", async () => {
    const org = await organization();
    const broken = system({ tmpDir: join(dir, "missing") });
    const e = await broken.create(caller(org), { format: "csv" });
    for (const attempt of [1, 2]) {
      const outcome = await broken.run(job(org, e.id), () => undefined, never);
      expect(outcome, `run ${attempt}`).toEqual({ nak: 1000 * 2 ** attempt });
      expect(await row(e.id)).toMatchObject({ status: "running", attempts: attempt, lapsed: true });
    }
    expect(await broken.run(job(org, e.id), () => undefined, never)).toBe("ack");
    expect(await row(e.id)).toMatchObject({ status: "failed", attempts: 3, error_code: "internal_error", file_key: null });
    expect((await broken.get(caller(org), e.id)).error?.detail).toMatch(/failed 3 times/);
    expect(await store.stat(exportFileKey(org, e.id, "csv"))).toBeNull();
  });

  it("when an organization has no tasks, then its export is an empty file", async () => {
    const org = await organization(0);
    const e = await system().create(caller(org), { format: "jsonl" });
    expect(await system().run(job(org, e.id), () => undefined, never)).toBe("ack");
    expect(await text(exportFileKey(org, e.id, "jsonl"))).toBe("");
  });

  it("when the sweep runs, then expired files leave the store, waiting exports whose message is old are published again once, and old finished ones are forgotten", async () => {
    const org = await organization();
    const done = await system().create(caller(org), { format: "jsonl" });
    await system().run(job(org, done.id), () => undefined, never);
    const key = exportFileKey(org, done.id, "jsonl");
    expect(await store.stat(key)).not.toBeNull();
    await sql`update exports set expires_at = now() - interval '1 second' where id = ${done.id}`;
    const lost = await system().create(caller(org), { format: "csv" });
    await sql`update exports set published_at = now() - interval '6 minutes' where id = ${lost.id}`;
    const old = newId("exp");
    await sql`insert into exports (id, organization_id, requested_by, format, include, status, created_at, completed_at)
      values (${old}, ${org}, 'usr_t', 'jsonl', '{tasks}', 'failed', now() - interval '40 days', now() - interval '40 days')`;
    published.length = 0;

    const swept = await system().sweep();
    expect(swept.expired).toBeGreaterThanOrEqual(1);
    expect(await store.stat(key)).toBeNull();
    expect(await row(done.id)).toMatchObject({ status: "succeeded", file_key: null });
    expect((await system().get(caller(org), done.id)).download).toBeNull();
    expect(published).toContainEqual(job(org, lost.id));
    expect(await row(old)).toBeUndefined();
    published.length = 0;
    await system().sweep();
    expect(published).not.toContainEqual(job(org, lost.id));
  });
});
