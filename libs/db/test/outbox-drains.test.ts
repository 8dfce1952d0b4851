import { randomUUID } from "node:crypto";
import { createLogger } from "@tasksvc/logger";
import { connectNats, deleteStreams, ensureStream, jetstream, nanos, type NatsConnection } from "@tasksvc/nats";
import { dropDatabase, eventually } from "@tasksvc/testing";
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from "vitest";
import {
  createDb,
  type Database,
  ensureDatabase,
  type OutboxPublisher,
  type OutboxRelay,
  type OutboxRow,
  outboxDrains,
  startOutboxRelay,
} from "../src/index.js";

// Which replica calls its outbox relay stalled: two "replicas" (a pool each) relay one table under
// one lock, on a database, table, lock and subjects of this file's own.
const stack = inject("stack");
const suffix = randomUUID().slice(0, 8);
const databaseUrl = (() => {
  const u = new URL(stack.databaseUrl);
  u.pathname = `${u.pathname}_drains_${suffix}`;
  return u.toString();
})();
const SCHEMA = "outbox_drains";
const TABLE = "outbox";
const LOCK = `outbox-drains-test-${suffix}`;
const prefix = `${stack.namespace}_drains_${suffix}`;
const STALL_AFTER_MS = 1000;
const log = createLogger({ service: "outbox-drains-test", level: "silent" });

let a: Database;
let b: Database;
let nc: NatsConnection;
const relays: OutboxRelay[] = [];

beforeAll(async () => {
  await ensureDatabase(databaseUrl);
  a = createDb({ url: databaseUrl, schema: SCHEMA, max: 4 });
  b = createDb({ url: databaseUrl, schema: SCHEMA, max: 4 });
  await a.sql`create schema ${a.sql(SCHEMA)}`;
  // The columns every service's outbox has, created_at included (the backlog's age is read from it).
  await a.sql`create table ${a.sql(TABLE)} (
    seq bigserial primary key, event_id text not null unique, payload jsonb not null, created_at timestamptz not null default now())`;
  nc = await connectNats({ url: stack.natsUrl, name: "outbox-drains-test" });
});

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()));
  await a.sql`delete from ${a.sql(TABLE)}`;
});

afterAll(async () => {
  await deleteStreams(nc, prefix);
  await nc.drain();
  await Promise.all([a.end({ timeout: 1 }), b.end({ timeout: 1 })]);
  await dropDatabase(databaseUrl);
});

const start = (db: Database, publisher: OutboxPublisher, subject: string) => {
  const r = startOutboxRelay<OutboxRow>({ db, publisher, table: TABLE, lock: LOCK, subject: () => subject, log, pollMs: 20 });
  relays.push(r);
  return r;
};

async function enqueue(): Promise<void> {
  const id = `evt_${randomUUID()}`;
  await a.sql`insert into ${a.sql(TABLE)} (event_id, payload) values (${id}, ${a.sql.json({ id })})`;
}

const stalled = async (db: Database) => (await outboxDrains(db, STALL_AFTER_MS)).map((d) => d.stalled);

describe("outboxDrains()", () => {
  it("when the replica holding the relay's lock hangs in its publish, then that replica is stalled and the one finding the lock taken is not; once the publish goes through, neither is", async () => {
    const subject = `${prefix}.held`;
    await ensureStream(nc, { name: `${prefix}_held`, subjects: [subject], duplicate_window: nanos(60_000) });
    const js = jetstream(nc);
    let reached = false;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    // Replica a's publish waits for the test, its transaction (and the lock) held meanwhile.
    start(
      a,
      {
        async publish(s, data, opts) {
          reached = true;
          await gate;
          return js.publish(s, data, opts);
        },
      },
      subject,
    );
    await enqueue();
    await eventually(() => reached, { what: "replica a to take the row" });
    start(b, { publish: (s, data, opts) => js.publish(s, data, opts) }, subject);
    try {
      await eventually(async () => expect(await stalled(a)).toEqual([true]), { what: "replica a stalled" });
      // b has tried all along, finding the lock taken every time: not the relay that can publish.
      expect(await stalled(b)).toEqual([false]);
    } finally {
      release();
    }
    await eventually(async () => expect(await stalled(a)).toEqual([false]), { what: "replica a draining again" });
    expect(await stalled(b)).toEqual([false]);
  });

  it("when no relay can publish (no stream takes the subject), then every replica whose attempts fail is stalled once a row waited past the bound, and none before", async () => {
    const subject = `${prefix}.nowhere`;
    const js = jetstream(nc);
    const publisher: OutboxPublisher = { publish: (s, data, opts) => js.publish(s, data, opts) };
    start(a, publisher, subject);
    start(b, publisher, subject);
    expect([...(await stalled(a)), ...(await stalled(b))]).toEqual([false, false]);
    await enqueue();
    await eventually(async () => expect([...(await stalled(a)), ...(await stalled(b))]).toEqual([true, true]), {
      what: "both replicas stalled",
    });
  });

  it("when a replica runs no relay, then it reports none", async () => {
    expect(await outboxDrains(b, STALL_AFTER_MS)).toEqual([]);
  });
});
