#!/usr/bin/env node
// How the tables grow: bytes per task, per version, per event, per webhook delivery, with their
// indexes and TOAST. Prints figures, asserts nothing. After a build: node test/bench/growth.mjs
// (2-3 minutes; GROWTH_TASKS=5000,20000 4-6 minutes, more on a busy machine).
//
// The stack as in production (each service its own process, a fresh database and NATS namespace,
// both removed at the end), one tenant, one webhook endpoint pointed at a receiver in this process
// (127.0.0.1, port 0). Tasks are made through the public API, 100 per POST /v1/tasks/batch, up to
// each count of GROWTH_TASKS in turn (default 2500,10000), then each changed GROWTH_UPDATES times
// (default 2: status, then notes), so every task brings 1 + GROWTH_UPDATES versions, events and
// deliveries. After each step the events are relayed and every delivery made and reported
// (polled), then every table of the services' schemas is measured twice: after VACUUM ANALYZE
// (space of dead row versions stays allocated for reuse, as between autovacuum runs: "as written")
// and after VACUUM FULL ("packed"). Per-row figures are marginal, the growth from one step's
// packed tables to the next step's divided by the rows added, so small tables' fixed pages do not
// count. A last step makes GROWTH_KEYED (2000) single creates with an Idempotency-Key, to measure
// the records they leave (kept 24 h). The JSON goes to test/bench/results/growth.json.
import { spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { connectNats, deleteNamespaceStreams, jetstreamManager } from "@tasksvc/nats";
import { adminCli } from "./admin-cli.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const STEPS = (process.env.GROWTH_TASKS ?? "2500,10000").split(",").map(Number);
const UPDATES = Number(process.env.GROWTH_UPDATES ?? 2);
const KEYED = Number(process.env.GROWTH_KEYED ?? 2000);
const CONCURRENCY = Number(process.env.GROWTH_CONCURRENCY ?? 6);
const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
const NAMESPACE = `growth_${suffix}`;
const base = new URL(process.env.DATABASE_URL || "postgres://127.0.0.1:5432/postgres");
if (!base.username) base.username = "postgres";
const dbName = `tasksvc_growth_${suffix}`;
const dbUrl = new URL(base);
dbUrl.pathname = `/${dbName}`;
const DATABASE_URL = dbUrl.toString();
const SCHEMAS = ["keys", "tasks", "boards", "webhooks", "gateway"];
const note = (m) => process.stderr.write(`growth: ${m}\n`);
const started = Date.now();

// ---------- processes ----------

const children = [];
let cleaningUp = false;
/** Starts a service on free ports; resolves once it says it is ready, with the gateway's port. */
function start(name) {
  const child = spawn(process.execPath, [`services/${name}/dist/main.js`], {
    cwd: root,
    env: {
      ...process.env,
      LOG_LEVEL: "info",
      LOG_FORMAT: "json",
      NATS_URL,
      NATS_NAMESPACE: NAMESPACE,
      DATABASE_URL,
      PORT: "0",
      OPS_PORT: "0",
      // The receiver is on 127.0.0.1 over http: the egress guard is relaxed as for local use.
      WEBHOOK_ALLOW_HTTP: "true",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let tail = "";
  let port;
  return new Promise((resolve, reject) => {
    const onData = (d) => {
      // Only the last lines are kept: at info level the gateway logs every request.
      tail = (tail + d).slice(-20_000);
      for (const line of String(d).split("\n")) {
        if (line.includes("gateway listening")) port = Number(/"port":(\d+)/.exec(line)?.[1]);
        if (line.includes("service ready")) resolve({ port });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => {
      reject(new Error(`${name} exited with ${code}`));
      if (!cleaningUp) {
        console.error(`${name} exited with ${code}:\n${tail}`);
        void cleanup().finally(() => process.exit(1));
      }
    });
  });
}

let receiver;
async function cleanup() {
  cleaningUp = true;
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGTERM");
  await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once("exit", r)))));
  receiver?.close();
  const sql = postgres(base.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
  await sql.end({ timeout: 1 });
  const nc = await connectNats({ url: NATS_URL, name: "growth-cleanup" }).catch(() => null);
  if (nc) {
    await deleteNamespaceStreams(nc, NAMESPACE).catch(() => {});
    await nc.drain();
  }
}
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(sig, () => void cleanup().finally(() => process.exit(130)));
// However this process ends, its services do not outlive it; a closed pipe on stderr is no failure.
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
});
process.stderr.on("error", () => {});

const admin = adminCli(root, NATS_URL, NAMESPACE);

const until = async (what, check, ms = 300_000) => {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
};

// ---------- load ----------

/** Runs `jobs` (functions returning promises), at most CONCURRENCY at a time. */
async function pool(jobs) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) await jobs[next++]();
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

function api(gateway, key) {
  return async (method, path, body, headers = {}) => {
    const r = await fetch(`${gateway}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
    return JSON.parse(text);
  };
}

/** What a task looks like here: a title of ~45 characters and a description of ~160. */
const taskBody = (i) => ({
  title: `Prepare the quarterly report for account ${i}`,
  description: `Collect the figures from finance and sales, check them against last quarter's, and write a one-page summary for the review meeting (account ${i}).`,
  priority: ["LOW", "MEDIUM", "HIGH"][i % 3],
  due_date: "2026-12-31",
  story_points: 3,
});
const changes = [{ status: "IN_PROGRESS" }, { notes: "Figures from finance are in; sales to follow." }, { status: "COMPLETED" }];

/** Tasks from+1..to: created 100 per batch, then each changed UPDATES times, a round at a time. */
async function makeTasks(call, from, to) {
  const batches = [];
  for (let i = from; i < to; i += 100) batches.push(Array.from({ length: Math.min(100, to - i) }, (_, k) => i + k));
  const update = (u) => (i) => ({ method: "update", task_id: `T-${i + 1}`, body: changes[u % changes.length] });
  for (const op of [(i) => ({ method: "create", body: taskBody(i) }), ...Array.from({ length: UPDATES }, (_, u) => update(u))]) {
    await pool(
      batches.map((b) => async () => {
        const bad = (await call("POST", "/v1/tasks/batch", { operations: b.map(op) })).results.find((x) => x.status >= 300);
        if (bad) throw new Error(`batch item failed: ${JSON.stringify(bad)}`);
      }),
    );
  }
}

// ---------- measuring ----------

/** Every event relayed, fanned out, delivered and reported; the statistics' deltas compacted. */
async function settle(sql, jsm) {
  const t0 = Date.now();
  await until("the events and deliveries to settle", async () => {
    const [r] = await sql`
      select (select count(*) from tasks.outbox)::int + (select count(*) from webhooks.outbox)::int as outbox,
             (select count(*) from tasks.events where type like 'task.%')::int as events,
             (select count(*) from webhooks.deliveries)::int as deliveries,
             (select count(*) from webhooks.deliveries where state <> 'SUCCEEDED')::int as open,
             (select count(*) from webhooks.delivery_stat_deltas)::int as deltas`;
    if (r.outbox > 0 || r.open > 0 || r.deltas > 0 || r.deliveries !== r.events || receiver.count < r.deliveries) return false;
    const info = await jsm.consumers.info(`${NAMESPACE}_task_events`, `${NAMESPACE}_webhooks_fanout`);
    return info.num_pending === 0 && info.num_ack_pending === 0;
  });
  note(`settled in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

async function tablesOf(sql) {
  return sql`
    select n.nspname as schema, c.relname as name, c.oid::int as oid
    from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where c.relkind = 'r' and n.nspname = any(${SCHEMAS}) order by 1, 2`;
}

/**
 * Every table of the services' schemas: rows and bytes. `heap` is the main fork with its free-space
 * and visibility maps, `toast` the TOAST table with its index, `index` every index of the table.
 */
async function measure(sql, { full }) {
  const tables = await tablesOf(sql);
  for (const t of tables) await sql.unsafe(`vacuum ${full ? "full " : ""}analyze "${t.schema}"."${t.name}"`);
  const out = {};
  for (const t of tables) {
    const [s] = await sql.unsafe(
      `select (select count(*) from "${t.schema}"."${t.name}")::int8 as rows,
              pg_total_relation_size(c.oid) as total, pg_indexes_size(c.oid) as index,
              coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) as toast
       from pg_class c where c.oid = $1`,
      [t.oid],
    );
    const total = Number(s.total);
    const idx = await sql`select c.relname as name, pg_relation_size(c.oid) as bytes from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = ${t.oid}`;
    const indexes = Object.fromEntries(idx.map((r) => [r.name, Number(r.bytes)]));
    const [rows, index, toast] = [Number(s.rows), Number(s.index), Number(s.toast)];
    out[`${t.schema}.${t.name}`] = { rows, heap: total - index - toast, toast, index, total, indexes };
  }
  return out;
}

/** Both measurements of one step; the packed one last, so the next step starts from packed tables. */
async function snapshot(sql, jsm, tasks) {
  await settle(sql, jsm);
  const loose = await measure(sql, { full: false });
  const packed = await measure(sql, { full: true });
  const stream = (await jsm.streams.info(`${NAMESPACE}_task_events`)).state;
  const [p] = await sql`select avg(pg_column_size(payload))::int as event, (select avg(pg_column_size(body))::int from webhooks.event_bodies) as delivery
    from tasks.events`;
  return { tasks, loose, packed, stream: { messages: stream.messages, bytes: stream.bytes }, payload: p };
}

/** Bytes per row added between two measurements (null when no row was added). */
function marginal(a, b) {
  const rows = b.rows - a.rows;
  if (rows <= 0) return null;
  const per = (k) => (b[k] - a[k]) / rows;
  const indexes = Object.fromEntries(Object.keys(b.indexes).map((n) => [n, (b.indexes[n] - (a.indexes[n] ?? 0)) / rows]));
  return { rows, heap: per("heap"), toast: per("toast"), index: per("index"), total: per("total"), indexes };
}
const sum = (snap, names) => names.reduce((n, t) => n + (snap[t]?.total ?? 0), 0);

// ---------- the run ----------

let report;
try {
  const admin0 = postgres(base.toString(), { max: 1, onnotice: () => {} });
  await admin0.unsafe(`create database "${dbName}"`);
  await admin0.end({ timeout: 1 });
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      receiver.count += 1;
      res.writeHead(204).end();
    });
  });
  receiver.count = 0;
  receiver.keepAliveTimeout = 60_000;
  await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
  note(`starting the stack (database ${dbName}, namespace ${NAMESPACE}) …`);
  // keys first: the admin CLI needs it; tasks alone creates the extensions, then the rest together.
  await start("keys");
  await start("tasks");
  const [gw] = await Promise.all([start("gateway"), start("boards"), start("webhooks"), start("delivery")]);
  const gateway = `http://127.0.0.1:${gw.port}`;
  await until("gateway /readyz", async () => (await fetch(`${gateway}/readyz`)).ok, 60_000);
  const tenant = admin("bootstrap", "--org", "Growth", "--plan", "team", "--email", "growth@example.test");
  admin("set-limits", "--org", tenant.organization_id, "--burst", "1000000000", "--quota", "2000000000");
  const call = api(gateway, tenant.api_key);
  await call("POST", "/v1/webhook-endpoints", { url: `http://127.0.0.1:${receiver.address().port}/hook` });
  const sql = postgres(DATABASE_URL, { max: 2, onnotice: () => {} });
  const nc = await connectNats({ url: NATS_URL, name: "growth" });
  const jsm = await jetstreamManager(nc);
  const snaps = [];
  let made = 0;
  for (const n of STEPS) {
    let t0 = Date.now();
    note(`tasks ${made + 1}-${n}: creating, then ${UPDATES} changes each …`);
    await makeTasks(call, made, n);
    note(`${n - made} tasks and ${(n - made) * UPDATES} changes in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    made = n;
    t0 = Date.now();
    snaps.push(await snapshot(sql, jsm, n));
    note(`measured at ${n} tasks in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
  note(`${KEYED} single creates with an Idempotency-Key …`);
  await pool(Array.from({ length: KEYED }, (_, i) => () => call("POST", "/v1/tasks", taskBody(made + i), { "idempotency-key": randomUUID() })));
  const keyed = await snapshot(sql, jsm, made + KEYED);
  await nc.drain();
  await sql.end({ timeout: 1 });

  // ---------- figures ----------
  // Bytes per row added: from the packed tables of one step to the next step's, as written and
  // packed. The Idempotency-Key records grow in the last step only.
  const [first, last] = [snaps[0], snaps.at(-1)];
  const KEYED_TABLES = ["gateway.idempotency_keys", "tasks.idempotency"];
  const span = (t) => (KEYED_TABLES.includes(t) ? [last, keyed] : [first, last]);
  const rows = Object.keys(last.loose).map((t) => {
    const [a, b] = span(t);
    const packedPerRow = (s) => (s.packed[t].rows ? s.packed[t].total / s.packed[t].rows : null);
    return {
      table: t,
      rows: b.loose[t].rows,
      written: marginal(a.packed[t], b.loose[t]),
      packed: marginal(a.packed[t], b.packed[t]),
      packed_per_row: { [first.tasks]: packedPerRow(first), [last.tasks]: packedPerRow(last) },
    };
  });
  // A group's bytes per row of its first table: a task row, a version, an event with its place in
  // the stream's order, a delivery with its one attempt, a keyed write's two records.
  const group = (names) => {
    const [a, b] = span(names[0]);
    const per = (kind) => (sum(b[kind], names) - sum(a.packed, names)) / (b.loose[names[0]].rows - a.loose[names[0]].rows);
    return { written: per("loose"), packed: per("packed") };
  };
  const every = Object.keys(last.loose);
  const dTasks = last.tasks - first.tasks;
  const figures = {
    per_task_row: group(["tasks.tasks"]),
    per_version: group(["tasks.task_versions"]),
    per_event: group(["tasks.events", "tasks.event_stream"]),
    per_delivery: group(["webhooks.deliveries", "webhooks.attempts"]),
    per_keyed_write: group(KEYED_TABLES),
    // Everything a task brought, every table of every schema: its row, versions, events, deliveries.
    per_task_all_in: {
      written: (sum(last.loose, every) - sum(first.packed, every)) / dTasks,
      packed: (sum(last.packed, every) - sum(first.packed, every)) / dTasks,
    },
    jetstream_per_event: (last.stream.bytes - first.stream.bytes) / (last.stream.messages - first.stream.messages),
    event_payload_bytes: last.payload.event,
    delivery_payload_bytes: last.payload.delivery,
  };
  report = { at: new Date().toISOString(), node: process.version, cores: cpus().length, steps: STEPS, updates: UPDATES, keyed: KEYED, rows, figures };
} finally {
  await cleanup();
}

// ---------- report ----------

const f0 = (n) => (n === null || n === undefined || !Number.isFinite(n) ? "-" : Math.round(n).toLocaleString("en-US"));
const [n1, n2] = [STEPS[0], STEPS.at(-1)];
console.log(
  `\nTable growth · ${f0(n1)} → ${f0(n2)} tasks, ${UPDATES} changes each, 1 webhook endpoint · node ${process.version} · ${cpus().length} cores · ${f0((Date.now() - started) / 1000)} s · node test/bench/growth.mjs`,
);
console.log("bytes per row added between the steps: as written (after VACUUM) and packed (after VACUUM FULL); packed total/rows at each step\n");
const head = ["table", "rows", "heap", "toast", "index", "total", "packed heap", "index", "total", `total/rows @${n1}`, `@${n2}`];
// Tables that grow with tasks; the burst windows and the statistics rollup grow with time instead.
const grows = (r) => r.written && r.written.rows >= 100;
const body = report.rows
  .filter(grows)
  .map(({ table, rows, written: x, packed: p, packed_per_row: at }) => [
    table,
    ...[rows, x.heap, x.toast, x.index, x.total, p.heap, p.index, p.total, at[n1], at[n2]].map(f0),
  ]);
const w = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  ");
for (const row of [head, w.map((n) => "-".repeat(n)), ...body]) console.log(line(row));
console.log(`${report.rows.filter((r) => !grows(r)).length} other tables do not grow with tasks (organizations, keys, endpoints, counters, migrations,`);
console.log("the burst windows and the statistics rollup, which grow with time); test/bench/results/growth.json has every table and index");
const f = report.figures;
const pair = (x) => `${f0(x.written)} B (packed ${f0(x.packed)} B)`;
console.log(`\nper task row        ${pair(f.per_task_row)}`);
console.log(`per version         ${pair(f.per_version)}`);
console.log(
  `per event           ${pair(f.per_event)}   feed row + its place in the stream's order (the outbox is empty at rest) · JetStream ${f0(f.jetstream_per_event)} B`,
);
console.log(`per delivery        ${pair(f.per_delivery)}   delivery + its one attempt`);
console.log(`per keyed write     ${pair(f.per_keyed_write)}   the gateway's and the service's Idempotency-Key records (kept 24 h)`);
console.log(`per task, all-in    ${pair(f.per_task_all_in)}   1 row, ${1 + UPDATES} versions, ${1 + UPDATES} events, ${1 + UPDATES} deliveries`);
console.log(`(payloads as stored: event ${f0(f.event_payload_bytes)} B, webhook body (one per event) ${f0(f.delivery_payload_bytes)} B)`);
mkdirSync(new URL("./results", import.meta.url), { recursive: true });
writeFileSync(new URL("./results/growth.json", import.meta.url), `${JSON.stringify(report, null, 2)}\n`);
