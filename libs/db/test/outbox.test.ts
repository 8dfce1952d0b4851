import { randomUUID } from "node:crypto";
import { createLogger } from "@tasksvc/logger";
import { outboxDeadLetters } from "@tasksvc/telemetry";
import { connectNats, deleteStreams, ensureStream, jetstream, jetstreamManager, nanos, type NatsConnection } from "@tasksvc/nats";
import { dropDatabase, eventually } from "@tasksvc/testing";
import { z } from "zod";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import {
  createDb,
  type DeadLetterReason,
  ensureDatabase,
  startOutboxRelay,
  type Database,
  type OutboxPublisher,
  type OutboxRelay,
  type OutboxRow,
} from "../src/index.js";

// The relay library on a database, table, lock and stream of this file's own: none of them is a
// service's, so the stack's own relays cannot interfere. The table name needs quoting on purpose.
const stack = inject("stack");
const suffix = randomUUID().slice(0, 8);
const databaseUrl = (() => {
  const u = new URL(stack.databaseUrl);
  u.pathname = `${u.pathname}_outbox_${suffix}`;
  return u.toString();
})();
const SCHEMA = "outbox_lib";
const TABLE = "relay outbox";
const LOCK = `outbox-lib-test-${suffix}`;
const prefix = `${stack.namespace}_outbox_${suffix}`;
const stream = `${prefix}_events`;
/** A stream that stores messages of at most 2 KiB, on subjects of its own. */
const smallStream = `${prefix}_small`;
const smallPrefix = `${prefix}_small`;
/** The relay's default dead-letter table, beside TABLE. */
const DEAD = `${TABLE}_dead_letters`;
const log = createLogger({ service: "outbox-test", level: "silent" });

/** Rows of the test table: the common columns and the topic that names the subject. */
interface TestRow extends OutboxRow {
  topic: string;
}
const Payload = z.object({ id: z.string(), n: z.number().int() });
type Payload = z.infer<typeof Payload>;
const subjectOf = (row: TestRow) => `${prefix}.${row.topic}`;

let db: Database;
let nc: NatsConnection;

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  db = createDb({ url: databaseUrl, schema: SCHEMA, max: 8 });
  await db.sql`create schema ${db.sql(SCHEMA)}`;
  await db.sql`create table ${db.sql(TABLE)} (
    seq bigserial primary key, event_id text not null unique, topic text not null, payload jsonb not null)`;
  // The columns of the services' outbox_dead_letters (their migrations).
  await db.sql`create table ${db.sql(DEAD)} (
    event_id text primary key, outbox_seq bigint not null, subject text not null, payload jsonb not null, bytes integer not null,
    reason text not null, detail text not null, written_at timestamptz, dead_lettered_at timestamptz not null default now())`;
  nc = await connectNats({ url: stack.natsUrl, name: "outbox-test" });
  await ensureStream(nc, { name: stream, subjects: [`${prefix}.>`], duplicate_window: nanos(3600_000) });
  await ensureStream(nc, { name: smallStream, subjects: [`${smallPrefix}.>`], max_msg_size: 2048, duplicate_window: nanos(3600_000) });
});

beforeEach(async () => {
  await db.sql`delete from ${db.sql(TABLE)}`;
  await db.sql`delete from ${db.sql(DEAD)}`;
  await (await jetstreamManager(nc)).streams.purge(stream);
  await (await jetstreamManager(nc)).streams.purge(smallStream);
});

afterAll(async () => {
  await deleteStreams(nc, prefix);
  await nc.drain();
  await db.end({ timeout: 1 });
  await dropDatabase(databaseUrl);
});

/** Inserts n rows, one statement each (so seq order is commit order); returns their payloads. */
async function enqueue(n: number): Promise<Payload[]> {
  const out: Payload[] = [];
  for (let i = 0; i < n; i++) {
    const payload = { id: `evt_${randomUUID()}`, n: i };
    await db.sql`insert into ${db.sql(TABLE)} (event_id, topic, payload) values (${payload.id}, ${i % 2 ? "odd" : "even"}, ${db.sql.json(payload)})`;
    out.push(payload);
  }
  return out;
}

/** One row carrying `filler` bytes besides its payload's id and n (a message too large for somewhere). */
async function enqueueLarge(filler: number): Promise<Payload> {
  const payload = { id: `evt_${randomUUID()}`, n: -1 };
  await db.sql`insert into ${db.sql(TABLE)} (event_id, topic, payload) values (${payload.id}, 'large', ${db.sql.json({ ...payload, filler: "x".repeat(filler) })})`;
  return payload;
}

/** The stream's messages in stream order: subject and parsed payload. */
async function streamed(name = stream): Promise<Array<{ subject: string; payload: Payload }>> {
  const jsm = await jetstreamManager(nc);
  const { state } = await jsm.streams.info(name);
  const out: Array<{ subject: string; payload: Payload }> = [];
  for (let seq = state.first_seq; seq <= state.last_seq && state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(name, { seq });
    if (m) out.push({ subject: m.subject, payload: Payload.parse(m.json()) });
  }
  return out;
}

/** The real JetStream publisher, counting what the relay asked it to publish, per event id. */
function counting(onPublish?: (count: number) => void) {
  const js = jetstream(nc);
  const calls = new Map<string, number>();
  let total = 0;
  const publisher: OutboxPublisher = {
    async publish(subject, data, opts) {
      const ack = await js.publish(subject, data, opts);
      calls.set(opts.msgID, (calls.get(opts.msgID) ?? 0) + 1);
      onPublish?.(++total);
      return ack;
    },
  };
  return { publisher, calls };
}

const relay = (publisher: OutboxPublisher, batch: number): OutboxRelay =>
  startOutboxRelay<TestRow>({ db, publisher, table: TABLE, lock: LOCK, subject: subjectOf, log, pollMs: 20, batch });

async function rowsLeft(): Promise<number> {
  const [row] = await db.sql<{ n: number }[]>`select count(*)::int as n from ${db.sql(TABLE)}`;
  return row?.n ?? -1;
}

describe("startOutboxRelay()", () => {
  it("when rows are waiting, then each is published once, in seq order, on its row's subject, and deleted", async () => {
    const payloads = await enqueue(30);
    const { publisher, calls } = counting();
    const r = relay(publisher, 8);
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    const got = await streamed();
    expect(got, JSON.stringify(got)).toEqual(payloads.map((p) => ({ subject: `${prefix}.${p.n % 2 ? "odd" : "even"}`, payload: p })));
    expect([...calls.values()].every((c) => c === 1) && calls.size === 30, JSON.stringify([...calls])).toBe(true);
  });

  it("when two relays share one table and lock while rows arrive, then no row is published twice and the stream keeps outbox order", async () => {
    const { publisher, calls } = counting();
    const a = relay(publisher, 8);
    const b = relay(publisher, 8);
    const first = await enqueue(30);
    a.notify();
    b.notify();
    const second = await enqueue(30);
    a.notify();
    b.notify();
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await Promise.all([a.stop(), b.stop()]);
    const ids = [...first, ...second].map((p) => p.id);
    expect((await streamed()).map((m) => m.payload.id)).toEqual(ids);
    // The stream would drop a duplicate by its Msg-Id; the publisher's count shows there was none.
    expect(ids.map((id) => calls.get(id))).toEqual(ids.map(() => 1));
  });

  it("when the relay delivers locally, then rows reach their table in seq order and are deleted in one transaction, a row it cannot decode is set aside, and a failed delivery leaves them to the next batch, nothing published", async () => {
    await db.sql`create table if not exists delivered (event_id text primary key, n int not null, at bigserial)`;
    await db.sql`delete from delivered`;
    let failures = 1;
    const local = startOutboxRelay<TestRow, Payload>({
      db,
      table: TABLE,
      lock: LOCK,
      log,
      pollMs: 20,
      batch: 7,
      decode(row) {
        const p = Payload.safeParse(row.payload);
        return p.success ? { value: p.data } : { refused: "not a payload" };
      },
      async deliver(t, items) {
        await t`insert into delivered (event_id, n) select * from unnest(${items.map((p) => p.id)}::text[], ${items.map((p) => p.n)}::int[])`;
        // After the insert: the batch's transaction must take it back.
        if (failures-- > 0) throw new Error("the destination refused the batch");
      },
    });
    try {
      const before = await enqueue(10);
      const odd = `evt_${randomUUID()}`;
      await db.sql`insert into ${db.sql(TABLE)} (event_id, topic, payload) values (${odd}, 'odd', ${db.sql.json({ id: odd })})`;
      const after = await enqueue(10);
      local.notify();
      await eventually(async () => expect(await rowsLeft()).toBe(0));
      const rows = await db.sql<{ event_id: string }[]>`select event_id from delivered order by at`;
      expect(rows.map((r) => r.event_id)).toEqual([...before, ...after].map((p) => p.id));
      const dead = await db.sql<{ event_id: string; reason: string }[]>`select event_id, reason from ${db.sql(DEAD)}`;
      expect(dead).toEqual([{ event_id: odd, reason: "refused" }]);
      expect(await streamed()).toEqual([]);
    } finally {
      await local.stop();
    }
  });

  it("when rows are published, then onPublished gets each row's stream sequence in the batch's own transaction, and a re-sent row keeps its first one", async () => {
    const payloads = await enqueue(12);
    await db.sql`create table if not exists recorded (event_id text primary key, seq bigint not null)`;
    await db.sql`delete from recorded`;
    // The first batch's transaction fails after the hook ran: nothing it recorded stays, its rows
    // are published again (the stream drops them as duplicates and answers their first sequence).
    let failOnce = true;
    const r = startOutboxRelay<TestRow>({
      db,
      publisher: counting().publisher,
      table: TABLE,
      lock: LOCK,
      subject: subjectOf,
      log,
      pollMs: 20,
      batch: 5,
      onPublished: async (t, rows, seqs) => {
        await t`insert into recorded ${t(rows.map((row, i) => ({ event_id: row.event_id, seq: seqs[i] as number })))}`;
        if (failOnce) {
          failOnce = false;
          throw new Error("the batch's transaction fails after the hook");
        }
      },
    });
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    const jsm = await jetstreamManager(nc);
    const { state } = await jsm.streams.info(stream);
    const inStream: Array<[string, number]> = [];
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const m = await jsm.streams.getMessage(stream, { seq });
      if (m) inStream.push([Payload.parse(m.json()).id, seq]);
    }
    expect(inStream.map(([id]) => id)).toEqual(payloads.map((p) => p.id));
    const rows = await db.sql<Array<{ event_id: string; seq: string }>>`select event_id, seq from recorded order by seq`;
    expect(rows.map((x) => [x.event_id, Number(x.seq)])).toEqual(inStream);
  });

  it("when a relay is stopped mid-way, then it finishes its batch and leaves the rest to the next relay, which publishes them in order", async () => {
    const payloads = await enqueue(30);
    let first: OutboxRelay | undefined;
    let stopping: Promise<void> | undefined;
    // Stop asked for while the first batch is being published (as at a SIGTERM).
    const early = counting((count) => {
      if (count === 1) stopping = first?.stop();
    });
    first = relay(early.publisher, 10);
    await eventually(() => stopping !== undefined, { intervalMs: 20, what: "stop() to be asked" });
    await stopping;
    expect(early.calls.size).toBe(10);
    expect(await rowsLeft()).toBe(20);
    expect((await streamed()).map((m) => m.payload.id)).toEqual(payloads.slice(0, 10).map((p) => p.id));

    const late = counting();
    const next = relay(late.publisher, 10);
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await next.stop();
    expect((await streamed()).map((m) => m.payload.id)).toEqual(payloads.map((p) => p.id));
    expect([...late.calls].sort(), "the next relay published the other 20, once each").toEqual(
      payloads
        .slice(10)
        .map((p) => [p.id, 1])
        .sort(),
    );
  });
});

describe("startOutboxRelay() and rows that can never be published", () => {
  const counted = async (reason: DeadLetterReason) =>
    (await outboxDeadLetters.get()).values.find((v) => v.labels["outbox"] === TABLE && v.labels["reason"] === reason)?.value ?? 0;
  const setAside = () =>
    db.sql<Array<{ event_id: string; subject: string; bytes: number; reason: string; filler: number }>>`
      select event_id, subject, bytes, reason, length(payload->>'filler') as filler from ${db.sql(DEAD)} order by outbox_seq`;

  it("when a row's message is over the connection's max_payload, then it is set aside unsent and counted, and the rows behind it are published in order", async () => {
    const before = await counted("max_payload");
    const first = await enqueue(3);
    const large = await enqueueLarge(1_200_000);
    const behind = await enqueue(6);
    const { publisher, calls } = counting();
    const r = startOutboxRelay<TestRow>({
      db,
      publisher,
      table: TABLE,
      lock: LOCK,
      subject: subjectOf,
      log,
      pollMs: 20,
      batch: 4,
      maxPayload: () => nc.info?.max_payload,
    });
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    expect((await streamed()).map((m) => m.payload.id)).toEqual([...first, ...behind].map((p) => p.id));
    expect(calls.has(large.id), "never handed to the publisher").toBe(false);
    expect(await setAside()).toEqual([{ event_id: large.id, subject: `${prefix}.large`, bytes: expect.any(Number), reason: "max_payload", filler: 1_200_000 }]);
    expect((await counted("max_payload")) - before).toBe(1);
  });

  it("when the relay is not told the limit, then the NATS client's refusal of the message sets it aside, and the rows behind it are published in order", async () => {
    const before = await counted("refused");
    const first = await enqueue(2);
    const large = await enqueueLarge(1_200_000);
    const behind = await enqueue(2);
    const r = relay(counting().publisher, 8);
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    expect((await streamed()).map((m) => m.payload.id)).toEqual([...first, ...behind].map((p) => p.id));
    expect((await setAside()).map((x) => [x.event_id, x.reason])).toEqual([[large.id, "refused"]]);
    expect((await counted("refused")) - before).toBe(1);
  });

  it("when the stream refuses a message for its size, then it is set aside, and the rows behind it are published in order", async () => {
    const before = await counted("max_msg_size");
    const first = await enqueue(2);
    const large = await enqueueLarge(4096);
    const behind = await enqueue(3);
    const r = startOutboxRelay<TestRow>({
      db,
      publisher: counting().publisher,
      table: TABLE,
      lock: LOCK,
      subject: (row) => `${smallPrefix}.${row.topic}`,
      log,
      pollMs: 20,
      maxPayload: () => nc.info?.max_payload,
    });
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    expect((await streamed(smallStream)).map((m) => m.payload.id)).toEqual([...first, ...behind].map((p) => p.id));
    expect((await setAside()).map((x) => [x.event_id, x.reason, x.subject])).toEqual([[large.id, "max_msg_size", `${smallPrefix}.large`]]);
    expect((await counted("max_msg_size")) - before).toBe(1);
  });

  it("when publishing fails in a way a retry may cure (a timeout), then nothing is set aside and every row goes out, in order, once it passes", async () => {
    const payloads = await enqueue(6);
    const { publisher: real } = counting();
    let failures = 0;
    // The first batch's publishes all time out, as when NATS is unreachable for a moment.
    const flaky: OutboxPublisher = {
      publish(subject, data, opts) {
        if (failures < 6) {
          failures++;
          const err = new Error("timeout");
          err.name = "TimeoutError";
          return Promise.reject(err);
        }
        return real.publish(subject, data, opts);
      },
    };
    const r = startOutboxRelay<TestRow>({
      db,
      publisher: flaky,
      table: TABLE,
      lock: LOCK,
      subject: subjectOf,
      log,
      pollMs: 20,
      maxPayload: () => nc.info?.max_payload,
    });
    await eventually(async () => (await rowsLeft()) === 0, { intervalMs: 20, what: "the outbox to empty" });
    await r.stop();
    expect(failures).toBe(6);
    expect((await streamed()).map((m) => m.payload.id)).toEqual(payloads.map((p) => p.id));
    expect(await setAside()).toEqual([]);
  });
});
