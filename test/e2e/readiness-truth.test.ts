import { randomBytes } from "node:crypto";
import { parseConfig } from "@tasksvc/config";
import { taskEventsStream } from "@tasksvc/contracts";
import { ensureDatabase, quoteIdent } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { connectNats, ensureStream, jetstreamManager, nanos, type NatsConnection } from "@tasksvc/nats";
import { startService } from "@tasksvc/runtime";
import { dropDatabase, dropNamespace, eventually, loadService } from "@tasksvc/testing";
import postgres from "postgres";
import { afterEach, describe, expect, inject, it } from "vitest";

// /readyz of a tasks replica against a database and a NATS namespace of its own: the database is
// made read-only as a standby is (every write refused while `select 1` still answers), and the
// relay's stream is deleted so that nothing it holds can be published. Each must turn the replica
// not ready, naming the check, and ready again once put right, without a restart.
const stack = inject("stack");
// After each case: the replicas of one case must not add their gauges to the next one's scrape.
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: the /readyz body, asserted field by field
  body: any;
}

/** A tasks replica on a fresh database and namespace, with `settings` over the defaults. */
async function tasksReplica(label: string, settings: Record<string, string>) {
  const id = randomBytes(3).toString("hex");
  const url = new URL(stack.databaseUrl);
  url.pathname = `${url.pathname}_${label}_${id}`;
  const databaseUrl = url.toString();
  const database = decodeURIComponent(url.pathname.slice(1));
  const namespace = `${stack.namespace}_${id}`;
  await ensureDatabase(databaseUrl);
  // ALTER DATABASE and pg_terminate_backend from outside the database they act on.
  const maintenance = new URL(databaseUrl);
  maintenance.pathname = "/postgres";
  const admin = postgres(maintenance.toString(), { max: 1, onnotice: () => {} });
  const db = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const def = await loadService("tasks");
  const env = { DATABASE_URL: databaseUrl, NATS_URL: stack.natsUrl, NATS_NAMESPACE: namespace, OPS_PORT: "0", ...settings };
  const running = await startService(def, parseConfig(def.config, env, { service: "tasks" }), createLogger({ service: "tasks", level: "silent" }));
  cleanups.push(async () => {
    await running.stop();
    await db.end({ timeout: 1 });
    await admin.unsafe(`alter database ${quoteIdent(database)} reset default_transaction_read_only`).catch(() => undefined);
    await admin.end({ timeout: 1 });
    await dropNamespace(stack.natsUrl, namespace);
    await dropDatabase(databaseUrl);
  });
  const ops = `http://127.0.0.1:${running.opsPort}`;
  return {
    admin,
    db,
    database,
    namespace,
    async readyz(): Promise<Answer> {
      const r = await fetch(`${ops}/readyz`, { signal: AbortSignal.timeout(5000) });
      return { status: r.status, body: await r.json() };
    },
    async metrics(): Promise<string> {
      return (await fetch(`${ops}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
    },
  };
}

/** Ends every connection to `database` but the caller's: the service's pools connect again. */
async function terminateConnections(admin: postgres.Sql, database: string): Promise<void> {
  await admin`select pg_terminate_backend(pid) from pg_stat_activity where datname = ${database} and pid <> pg_backend_pid()`;
}

describe("/readyz tells the truth about the database", () => {
  it("when the database refuses writes as a standby does, then /readyz answers 503 naming postgres read_only and tasksvc_db_primary is 0; once writable, 200 again without a restart", async () => {
    const r = await tasksReplica("ro", {});
    await eventually(async () => expect((await r.readyz()).status).toBe(200), { what: "the replica ready" });
    expect(await r.metrics()).toMatch(/^tasksvc_db_primary 1$/m);

    await r.admin.unsafe(`alter database ${quoteIdent(r.database)} set default_transaction_read_only = on`);
    await terminateConnections(r.admin, r.database);
    const down = await eventually(
      async () => {
        const a = await r.readyz();
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body.checks.postgres, JSON.stringify(a.body)).toBe("read_only");
        return a;
      },
      { timeoutMs: 20_000, what: "/readyz to name postgres read_only" },
    );
    expect(down.body).toMatchObject({ status: "not_ready", checks: { nats: "ok" } });
    expect(await r.metrics()).toMatch(/^tasksvc_db_primary 0$/m);

    await r.admin.unsafe(`alter database ${quoteIdent(r.database)} reset default_transaction_read_only`);
    await terminateConnections(r.admin, r.database);
    await eventually(
      async () => {
        const a = await r.readyz();
        expect(a.status, JSON.stringify(a.body)).toBe(200);
      },
      { timeoutMs: 20_000, what: "/readyz ready again" },
    );
    expect(await r.metrics()).toMatch(/^tasksvc_db_primary 1$/m);
  });
});

describe("/readyz tells the truth about the outbox", () => {
  it("when the relay cannot publish (its stream deleted) and a row has waited longer than OUTBOX_STALL_AFTER, then /readyz answers 503 naming outbox stalled; once the stream is back, the row goes out and 200 again", async () => {
    const r = await tasksReplica("ob", { OUTBOX_STALL_AFTER: "1s" });
    await eventually(async () => expect((await r.readyz()).status).toBe(200), { what: "the replica ready" });
    const nc: NatsConnection = await connectNats({ url: stack.natsUrl, name: "readiness-test" });
    cleanups.push(() => nc.drain());
    const stream = taskEventsStream(r.namespace);
    // With no stream on the subject, every publish is refused at once (no responders): the relay
    // fails each round and keeps the row.
    await (await jetstreamManager(nc)).streams.delete(stream);
    const eventId = `evt_readiness_${randomBytes(4).toString("hex")}`;
    const payload = { id: eventId, type: "task.created", organization_id: "org_readiness", created_at: new Date().toISOString() };
    await r.db`insert into tasks.outbox (event_id, type, organization_id, payload) values (${eventId}, 'task.created', 'org_readiness', ${r.db.json(payload)})`;

    await eventually(
      async () => {
        const a = await r.readyz();
        expect(a.status, JSON.stringify(a.body)).toBe(503);
        expect(a.body.checks, JSON.stringify(a.body)).toMatchObject({ outbox: "stalled", postgres: "ok", nats: "ok" });
      },
      { timeoutMs: 20_000, what: "/readyz to name outbox stalled" },
    );
    expect(await r.metrics()).toMatch(/^tasksvc_outbox_stalled\{outbox="outbox"\} 1$/m);

    await ensureStream(nc, { name: stream, subjects: [`${r.namespace}.evt.tasks.>`], duplicate_window: nanos(3600_000) });
    await eventually(
      async () => {
        const a = await r.readyz();
        expect(a.status, JSON.stringify(a.body)).toBe(200);
        expect(a.body.checks.outbox).toBe("ok");
      },
      { timeoutMs: 20_000, what: "/readyz ready again" },
    );
    const [left] = await r.db<Array<{ n: number }>>`select count(*)::int as n from tasks.outbox`;
    expect(left?.n).toBe(0);
    expect(await r.metrics()).toMatch(/^tasksvc_outbox_stalled\{outbox="outbox"\} 0$/m);
  });
});
