import { type EndpointEvent, OrgEvent, TaskEvent, taskEventsStream, type Task } from "@tasksvc/contracts";
import { createDb, migrate } from "@tasksvc/db";
import { outboxDeadLetters } from "@tasksvc/telemetry";
import { createLogger } from "@tasksvc/logger";
import type postgres from "postgres";
import { apiTask, eventually } from "@tasksvc/testing";
import { connectNats, ensureStream, jetstream, jetstreamManager, nanos, type JetStreamClient, type NatsConnection } from "@tasksvc/nats";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { startRelay } from "../src/relay.js";
import { eventsRepo } from "../src/repo/events-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

// The relay against a schema of its own (the stack's tasks service relays `tasks`) and a NATS
// namespace of its own, under the test run's prefix so that the run's clean-up removes it.
const stack = inject("stack");
const SCHEMA = "tasks_relay_test";
const namespace = `${stack.namespace}_relay`;
const stream = taskEventsStream(namespace);
const log = createLogger({ service: "relay-test", level: "silent" });
const db = createDb({ url: stack.databaseUrl, schema: SCHEMA, max: 6 });
const sql = db.sql;
let nc: NatsConnection;

beforeAll(async () => {
  await migrate({ url: stack.databaseUrl, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  nc = await connectNats({ url: stack.natsUrl, name: "relay-test" });
  await ensureStream(nc, { name: stream, subjects: [`${namespace}.evt.tasks.>`], duplicate_window: nanos(3600_000) });
});

beforeEach(async () => {
  await sql`delete from outbox`;
  await sql`delete from outbox_dead_letters`;
  await (await jetstreamManager(nc)).streams.purge(stream);
});

afterAll(async () => {
  await (await jetstreamManager(nc)).streams.delete(stream);
  await nc.drain();
  await sql.unsafe(`drop schema ${SCHEMA} cascade`);
  await db.end({ timeout: 1 });
});

/** A task in the API shape, so that every relayed event is a valid TaskEvent. */
const task: Task = apiTask("relayed");

async function enqueue(n: number, data: Task = task): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `evt_relay_${Date.now()}_${i}`);
  for (const id of ids) {
    const event: TaskEvent = { id, type: "task.created", organization_id: "org_relay", created_at: new Date().toISOString(), data };
    // A TaskEvent is JSON (its `changes` values are typed unknown, so the driver's type cannot tell).
    await sql`insert into outbox (event_id, type, organization_id, payload) values (${id}, 'task.created', 'org_relay', ${sql.json(event as postgres.JSONValue)})`;
  }
  return ids;
}

async function streamed(): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info(stream);
  const out: string[] = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m) out.push(TaskEvent.parse(m.json()).id);
  }
  return out;
}

const outboxEmpty = async () => Number((await sql`select count(*)::int as n from outbox`)[0]?.["n"]) === 0;

describe("outbox relay", () => {
  it("when rows are waiting, then each is published once, in outbox order, and deleted", async () => {
    const ids = await enqueue(40);
    const relay = startRelay({ db, js: jetstream(nc), nc, namespace, log, pollMs: 50, batch: 16 });
    await eventually(outboxEmpty, { what: "the outbox to empty" });
    await relay.stop();
    expect(await streamed()).toEqual(ids);
  });

  it("when the relay dies after JetStream acknowledged a batch but before deleting it, then the rows are sent again and the stream keeps one copy", async () => {
    const ids = await enqueue(10);
    const real = jetstream(nc);
    let published = 0;
    // Acknowledged by JetStream, then the "process" fails before its transaction commits.
    const crashing = {
      publish: async (...args: Parameters<JetStreamClient["publish"]>) => {
        const ack = await real.publish(...args);
        published += 1;
        if (published === 10) throw new Error("crash after publish");
        return ack;
      },
    } as unknown as JetStreamClient;
    const relay = startRelay({ db, js: crashing, nc, namespace, log, pollMs: 50 });
    await eventually(outboxEmpty, { what: "the outbox to empty" });
    await relay.stop();
    expect(published).toBeGreaterThanOrEqual(20);
    expect(await streamed()).toEqual(ids);
  });

  it("when a row is too large for NATS, then it is set aside in the dead-letter table and counted, and the rows behind it are published in order", async () => {
    const deadLetters = async () =>
      (await outboxDeadLetters.get()).values.find((v) => v.labels["outbox"] === "outbox" && v.labels["reason"] === "max_payload")?.value ?? 0;
    const before = await deadLetters();
    const first = await enqueue(3);
    // 200,000 control characters of notes: 1.2 MB of JSON, over NATS's 1 MiB max_payload.
    const [tooLarge] = await enqueue(1, { ...task, notes: "\u0001".repeat(200_000) });
    const behind = await enqueue(5);
    const relay = startRelay({ db, js: jetstream(nc), nc, namespace, log, pollMs: 50, batch: 4 });
    await eventually(outboxEmpty, { what: "the outbox to empty" });
    await relay.stop();
    expect(await streamed()).toEqual([...first, ...behind]);
    const set = await sql<Array<{ event_id: string; subject: string; bytes: number; reason: string; notes: string }>>`
      select event_id, subject, bytes, reason, payload->'data'->>'notes' as notes from outbox_dead_letters`;
    expect(set.map((r) => ({ ...r, notes: r.notes.length }))).toEqual([
      { event_id: tooLarge, subject: `${namespace}.evt.tasks.task.created`, bytes: expect.any(Number), reason: "max_payload", notes: 200_000 },
    ]);
    expect(set[0]?.bytes).toBeGreaterThan(1024 * 1024);
    expect((await deadLetters()) - before).toBe(1);
    // Not in the live stream's order either: it was never published.
    expect(await sql`select 1 from event_stream where event_id = ${tooLarge ?? ""}`).toHaveLength(0);
  });

  it("when two relays run against one outbox, then nothing is published twice or lost", async () => {
    const a = startRelay({ db, js: jetstream(nc), nc, namespace, log, pollMs: 20, batch: 8 });
    const b = startRelay({ db, js: jetstream(nc), nc, namespace, log, pollMs: 20, batch: 8 });
    const ids = await enqueue(60);
    a.notify();
    b.notify();
    await eventually(outboxEmpty, { what: "the outbox to empty" });
    await Promise.all([a.stop(), b.stop()]);
    expect(await streamed()).toEqual(ids);
  });
});

describe("taking in an endpoint's operational event", () => {
  const endpointEvent = (id: string): EndpointEvent => ({
    id,
    type: "webhook_endpoint.disabled",
    organization_id: "org_relay",
    created_at: "2026-11-28T09:30:00.000Z",
    data: {
      id: "whe_relay",
      url: "https://hooks.example.com/relay",
      enabled: false,
      event_types: ["task.created"],
      verified: false,
      disabled_reason: "consecutive_failures",
      failure_count: 4,
      last_success_at: null,
      last_failure_at: "2026-11-28T09:29:59.000Z",
      rate_limit: null,
      created_at: "2026-11-01T00:00:00.000Z",
      updated_at: "2026-11-28T09:30:00.000Z",
    },
  });

  it("when its message comes twice, at once or after it was relayed, then it is taken in, published and recorded once, and the feed shows it", async () => {
    const repo = eventsRepo(sql);
    const e = endpointEvent(`evt_ops_${Date.now()}`);
    // Two replicas at once: one insert wins, the other finds the outbox row.
    expect((await Promise.all([repo.takeIn(e), repo.takeIn(e)])).sort()).toEqual([false, true]);
    const relay = startRelay({ db, js: jetstream(nc), nc, namespace, log, pollMs: 50 });
    await eventually(outboxEmpty, { what: "the outbox to empty" });
    // Redelivered after the relay deleted the outbox row: the feed has it, so nothing is added.
    expect(await repo.takeIn(e)).toBe(false);
    expect(await outboxEmpty()).toBe(true);
    await relay.stop();
    const jsm = await jetstreamManager(nc);
    const { state } = await jsm.streams.info(stream);
    const stored = await jsm.streams.getMessage(stream, { seq: state.last_seq });
    expect(state.messages).toBe(1);
    expect(stored?.subject).toBe(`${namespace}.evt.tasks.webhook_endpoint.disabled`);
    expect(OrgEvent.parse(stored?.json())).toEqual(e);
    expect(await sql`select event_id from event_stream where event_id = ${e.id}`).toHaveLength(1);
    expect(await repo.get("org_relay", e.id)).toEqual({ id: e.id, type: e.type, timestamp: e.created_at, data: e.data });
  });
});
