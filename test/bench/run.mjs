#!/usr/bin/env node
// Benchmark harness (npm run bench / make bench). Prints figures, asserts nothing.
//
// In one run: two baselines (a bare fastify route; fastify → NATS request/reply → echo responder in
// another process, the floor of one hop) and the full stack, each service in its own process as in
// production, on a fresh database and NATS namespace. Every scenario gets a warm-up, then a measured
// run at CONNECTIONS connections; req/s is also shown as a ratio of the one-hop baseline.
// The load generator is wrk when installed (C, so it leaves the 2 cores to the system under test),
// else autocannon (BENCH_TOOL=autocannon forces it). Traffic goes to 127.0.0.1 only.
// Later issues add scenarios to SCENARIOS below.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import postgres from "postgres";
import { SERVICE_NODE_FLAGS } from "@tasksvc/contracts";
import { connectNats, deleteNamespaceStreams, jetstreamManager } from "@tasksvc/nats";
import { mcpScenarios, printMcp } from "./mcp.mjs";
import { metricsSnapshot, printMetricsSnapshot } from "./metrics.mjs";
import { exportScenarios, printExports } from "./exports.mjs";
import { printRewinds, rewindScenarios } from "./rewinds.mjs";
import { startAutovacuum } from "./autovacuum.mjs";
import { commentTarget, notificationScenarios, printNotifications } from "./notifications.mjs";
import { recurrenceScenarios } from "./recurrence.mjs";
import { importScenarios, printImports } from "./imports.mjs";
import { FIELDS, printSearch, searchScenarios } from "./search.mjs";
import { printStreams, streamScenarios } from "./streams.mjs";
import { uploadScenarios } from "./uploads.mjs";
import { webhookScenarios } from "./webhooks.mjs";
import { cpuPerRequest, cpuSnapshot, namePostgresBackends, POSTGRES_PART, steadyLoad, writesSnapshot } from "./yardsticks.mjs";
import { adminCli } from "./admin-cli.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
// The notification latency scenario's own durations (a smoke run shortens them alone).
const NOTIFY_SECONDS = Number(process.env.BENCH_NOTIFY_SECONDS ?? DURATION);
const NOTIFY_WARMUP = Number(process.env.BENCH_NOTIFY_WARMUP ?? WARMUP);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
// The steady offered rates (open-loop), well under capacity: reads and writes.
const STEADY_READS = Number(process.env.BENCH_STEADY_READS ?? 400);
const STEADY_WRITES = Number(process.env.BENCH_STEADY_WRITES ?? 200);
const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const PG_BASE = process.env.DATABASE_URL ?? "postgres://127.0.0.1:5432/postgres";
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
const NAMESPACE = `bench_${suffix}`;
const dbUrl = new URL(PG_BASE);
dbUrl.pathname = `/tasksvc_bench_${suffix}`;
const DATABASE_URL = dbUrl.toString();

/**
 * Full-stack scenarios; later issues add theirs here. A scenario is a tool-neutral request:
 * method, path, headers, body, and whether each request needs a fresh Idempotency-Key.
 */
const SCENARIOS = [
  {
    name: "GET /v1/organizations",
    matched: "orgs",
    request: ({ key }) => ({ method: "GET", path: "/v1/organizations", headers: { authorization: `Bearer ${key}` } }),
  },
  {
    name: "POST /v1/api-keys + Idempotency-Key",
    matched: "apikey",
    request: ({ key }) => ({
      method: "POST",
      path: "/v1/api-keys",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench" }),
      // A fresh key per request: each one is a first execution (claim, execute, store).
      freshIdempotencyKey: true,
    }),
  },
  {
    name: "POST /v1/tasks + Idempotency-Key",
    matched: "create",
    request: ({ key }) => ({
      method: "POST",
      path: "/v1/tasks",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Benchmark task", priority: "HIGH", due_date: "2026-12-31", story_points: 3 }),
      freshIdempotencyKey: true,
    }),
  },
  // The same create with 5 labels and a value for each of 10 custom fields (one of every type, a
  // user field among them), defined through the API before the scenarios run: what labels and
  // values cost a create, beside the plain one above. Its matched baseline runs the statements such
  // a create runs (the labels' lock, the definitions, the member check, the create with the bigger
  // row) on copies of the labels and definitions.
  {
    name: "POST /v1/tasks + 10 custom fields, 5 labels + Idempotency-Key",
    matched: "create_custom",
    request: ({ key, custom }) => ({
      method: "POST",
      path: "/v1/tasks",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        title: "Benchmark task",
        priority: "HIGH",
        due_date: "2026-12-31",
        story_points: 3,
        label_ids: custom.labelIds,
        custom_fields: custom.values,
      }),
      freshIdempotencyKey: true,
    }),
  },
  // 100 creates in one request, beside the single POST above: tasks/s is req/s × 100.
  {
    name: "POST /v1/tasks/batch (100 creates) + Idempotency-Key",
    request: ({ key }) => ({
      method: "POST",
      path: "/v1/tasks/batch",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        operations: Array.from({ length: 100 }, () => ({
          method: "create",
          body: { title: "Benchmark task", priority: "HIGH", due_date: "2026-12-31", story_points: 3 },
        })),
      }),
      freshIdempotencyKey: true,
    }),
  },
  {
    name: "GET /v1/tasks/{id}",
    matched: "task",
    request: ({ key }) => ({ method: "GET", path: "/v1/tasks/T-1", headers: { authorization: `Bearer ${key}` } }),
  },
  // The same PATCH with and without If-Match, in one run: what the precondition costs. The title is
  // the task's own (seeded "Seed 2"), so every PATCH reads and locks the row, finds no change and
  // answers 200, and the version If-Match names stays current.
  {
    name: "PATCH /v1/tasks/{id} (no change)",
    request: ({ key }) => ({
      method: "PATCH",
      path: "/v1/tasks/T-3",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Seed 2" }),
    }),
  },
  {
    name: "PATCH /v1/tasks/{id} (no change) + If-Match",
    request: ({ key }) => ({
      method: "PATCH",
      path: "/v1/tasks/T-3",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "if-match": '"1"' },
      body: JSON.stringify({ title: "Seed 2" }),
    }),
  },
  {
    name: "GET /v1/tasks (page of 25)",
    matched: "page",
    // The bench tenant's scans are 7 in flight and 32 waiting per tasks replica (its share of the
    // connections, set with set-limits); a 40th at once is refused 429. The bench measures pages, not refusals.
    connections: 32,
    request: ({ key }) => ({ method: "GET", path: "/v1/tasks?limit=25", headers: { authorization: `Bearer ${key}` } }),
  },
  {
    name: "GET /v1/daily-plan (50 entries)",
    matched: "board",
    request: ({ key }) => ({ method: "GET", path: `/v1/daily-plan?date=${BOARD_DAY}`, headers: { authorization: `Bearer ${key}` } }),
  },
];
const BOARD_DAY = "2026-11-23";
/** The bench tenant's custom fields, for the create that carries them: the search bench's fields, made through the API. */
const CUSTOM_FIELDS = FIELDS.map(({ options, ...f }) =>
  options === undefined ? f : { ...f, options: Array.from({ length: options }, (_, i) => ({ name: `${f.name} ${i + 1}` })) },
);

/** 20 labels and the 10 fields through the API; answers the 5 labels and 10 values a create sends. */
async function defineCustomFields(post, userId) {
  const labels = [];
  for (let i = 0; i < 20; i++) labels.push(await post("/v1/labels", { name: `Bench label ${i + 1}` }));
  const fields = {};
  for (const f of CUSTOM_FIELDS) fields[f.key] = await post("/v1/custom-fields", f);
  return {
    labelIds: [0, 3, 7, 12, 19].map((i) => labels[i].id),
    values: {
      customer: fields.customer.options[4].id,
      tags: [fields.tags.options[1].id, fields.tags.options[6].id],
      estimate: 8.5,
      release: "2026-12-01",
      reviewer: userId,
      done: false,
      link: "https://example.test/issues/42",
      summary: "A benchmark task with a value in every custom field",
      score: 73,
      due_week: "2026-11-23",
    },
  };
}

// ---------- processes ----------

const children = [];
let cleaningUp = false;
function start(name, script, env) {
  // Every process runs with the flags the services run with in production, the baselines too, so
  // that the figures compare code, not runtimes; BENCH_NODE_ARGS, e.g. "--cpu-prof
  // --cpu-prof-dir=/tmp/prof", goes to every process started here as well.
  const nodeArgs = [...SERVICE_NODE_FLAGS, ...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(" ") : [])];
  const child = spawn(process.execPath, [...nodeArgs, script], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "warn", NATS_URL, NATS_NAMESPACE: NAMESPACE, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.output = "";
  child.stdout.on("data", (d) => (child.output += d));
  child.stderr.on("data", (d) => (child.output += d));
  child.on("exit", (code) => {
    if (!cleaningUp && !child.stopping && code !== 0) {
      console.error(`${name} exited with ${code}:\n${child.output}`);
      cleanup().then(
        () => process.exit(1),
        (err) => {
          console.error("cleanup failed:", err);
          process.exit(1);
        },
      );
    }
  });
  child.benchName = name;
  children.push(child);
  return child;
}
function stop(child) {
  child.stopping = true;
  child.kill("SIGTERM");
}
const until = async (what, check, ms = 30_000) => {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
};
const ready = (child) => until(`${child.benchName} to be ready`, async () => child.output.includes("ready"));

const scratch = join(tmpdir(), `tasksvc-bench-${suffix}`);
mkdirSync(scratch, { recursive: true });

/** The autovacuum stand-in, once the stack runs. */
let autovacuum = null;
/** One connection that reads pg_stat_activity before CPU snapshots, opened at the first. */
let whoSql = null;
async function cleanup() {
  cleaningUp = true;
  await autovacuum?.stop();
  await whoSql?.end({ timeout: 1 });
  for (const c of children) c.kill("SIGTERM");
  // A child ended by a signal has a signalCode and no exitCode.
  await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once("exit", r)))));
  const u = new URL(DATABASE_URL);
  const name = u.pathname.slice(1);
  u.pathname = "/postgres";
  const sql = postgres(u.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
  await sql.end({ timeout: 1 });
  rmSync(scratch, { recursive: true, force: true });
  // The run's JetStream streams (task events) go with its namespace.
  const nc = await connectNats({ url: NATS_URL, name: "bench-cleanup" }).catch(() => null);
  if (nc) {
    await deleteNamespaceStreams(nc, NAMESPACE).catch(() => {});
    await nc.drain();
  }
}
process.on("SIGINT", () => cleanup().then(() => process.exit(130)));

const admin = adminCli(root, NATS_URL, NAMESPACE);

// ---------- load generators ----------

const WRK =
  process.env.BENCH_TOOL === "autocannon"
    ? null
    : (() => {
        const r = spawnSync("sh", ["-c", "command -v wrk"], { encoding: "utf8" });
        return r.status === 0 ? r.stdout.trim() : null;
      })();

/** A wrk Lua script for one request shape; fresh Idempotency-Keys are unique per thread and call. */
function wrkScript(req) {
  const lua = [`wrk.method = ${JSON.stringify(req.method)}`];
  for (const [k, v] of Object.entries(req.headers ?? {})) lua.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  if (req.body !== undefined) lua.push(`wrk.body = ${JSON.stringify(req.body)}`);
  lua.push("local n = 0", "function setup(thread) n = n + 1; thread:set('tid', n) end", "local counter = 0");
  // Unique per wrk run (warm-up and measurement, every scenario): keys are scoped to the credential,
  // and one reused on another path would be answered 422 idempotency_key_reused.
  const fresh = req.freshIdempotencyKey ? `wrk.headers["idempotency-key"] = "${randomUUID()}-" .. tid .. "-" .. counter; ` : "";
  // `paths`: requests take them in turn (a load spread over many resources).
  lua.push(`local paths = { ${(req.paths ?? [req.path]).map((x) => JSON.stringify(x)).join(", ")} }`);
  lua.push(`function request() counter = counter + 1; ${fresh}return wrk.format(nil, paths[(counter % #paths) + 1]) end`);
  return lua.join("\n");
}

const toMs = (v, unit) => Number(v) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? 1);
/**
 * Asynchronous, so the bench's own loops (the API keys' revoker, the autovacuum stand-in) keep
 * running while wrk does: under spawnSync they stalled, the organization reached its limit of live
 * keys in the warm-up, and the measured mints were all 409 limit_reached.
 */
async function runWrk(url, req, duration, connections = CONNECTIONS) {
  const script = join(scratch, `${randomUUID()}.lua`);
  writeFileSync(script, wrkScript(req));
  const r = await new Promise((resolve, reject) => {
    const child = spawn(WRK, ["-t2", `-c${connections}`, `-d${duration}s`, "--latency", "-s", script, url]);
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d) => (stderr += d));
    child.on("error", reject).on("close", (status) => resolve({ status, stdout, stderr }));
  });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  const out = r.stdout;
  const pct = (p) => {
    const m = new RegExp(`^\\s*${p}%\\s+([\\d.]+)(us|ms|s)`, "m").exec(out);
    return m ? toMs(m[1], m[2]) : NaN;
  };
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
    p50: pct(50),
    p99: pct(99),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    errors: socket ? socket.slice(1).reduce((a, b) => a + Number(b), 0) : 0,
  };
}

function runAutocannon(url, req, duration, connections = CONNECTIONS) {
  const request = { method: req.method, path: req.path, headers: req.headers ?? {}, ...(req.body === undefined ? {} : { body: req.body }) };
  let turn = 0;
  const paths = req.paths ?? [req.path];
  request.setupRequest = (r) => ({
    ...r,
    path: paths[turn++ % paths.length],
    ...(req.freshIdempotencyKey ? { headers: { ...r.headers, "idempotency-key": randomUUID() } } : {}),
  });
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, requests: [request] }, (err, res) =>
      err
        ? reject(err)
        : resolve({
            rps: res.requests.average,
            requests: res.requests.total,
            p50: res.latency.p50,
            p99: res.latency.p99,
            non2xx: res.non2xx,
            errors: res.errors + res.timeouts,
          }),
    );
  });
}

/** Waits (at most 5 min) until the outbox is relayed and the webhook fan-out and the notifications consumer have every event. */
async function settleEvents() {
  const started = Date.now();
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  const nc = await connectNats({ url: NATS_URL, name: "bench-settle" });
  try {
    const jsm = await jetstreamManager(nc);
    await until(
      "the outboxes, the webhook fan-out, the notifications consumer and the audit chain to catch up",
      async () => {
        // The audit events of a write (a key's mint, a task's change) are the write's own work
        // too: left in flight, they would be counted against the next scenario.
        const [{ n }] = await sql`
          select (select count(*) from tasks.outbox) + (select count(*) from tasks.audit_outbox)
            + (select count(*) from keys.audit_outbox) + (select count(*) from webhooks.audit_outbox)
            + (select count(*) from webhooks.outbox) as n`;
        if (Number(n) > 0) return false;
        const consumers = [
          [`${NAMESPACE}_task_events`, `${NAMESPACE}_webhooks_fanout`],
          [`${NAMESPACE}_task_events`, `${NAMESPACE}_notifications`],
          [`${NAMESPACE}_audit`, "keys-audit-chain"],
        ];
        for (const [stream, durable] of consumers) {
          const info = await jsm.consumers.info(stream, durable);
          if (info.num_pending !== 0 || info.num_ack_pending !== 0) return false;
        }
        return true;
      },
      300_000,
    );
  } finally {
    await nc.drain();
    await sql.end({ timeout: 1 });
  }
  process.stderr.write(`bench: events settled in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

/** The pids of the bench's live processes by name, for the CPU figures. */
const liveProcesses = () =>
  Object.fromEntries(children.filter((c) => c.exitCode === null && c.signalCode === null && !c.stopping).map((c) => [c.benchName, c.pid]));

/**
 * A warm-up, then the measured run. With `cpu`, the CPU time of every process over the measured
 * run divided by the requests it served; a write's run ends when its events are relayed and fanned
 * out, so what each write causes later is charged to it too.
 */
/**
 * Refreshes the planner's statistics of the tables the API scenarios read, as autovacuum would after
 * the writes of a scenario: this machine's Postgres runs with autovacuum off, and a plan made for
 * an empty table (a scan of a whole organization where the primary key serves) would be measured
 * instead of the code. Not the webhooks tables: analyzed empty, they would be planned as empty
 * while the webhook scenarios fill them.
 */
async function analyze() {
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    const tables = await sql`select format('%I.%I', schemaname, tablename) as name from pg_tables where schemaname in ('keys', 'tasks', 'boards')`;
    for (const { name } of tables) await sql.unsafe(`analyze ${name}`);
  } finally {
    await sql.end({ timeout: 1 });
  }
}

const namePostgres = () => namePostgresBackends((whoSql ??= postgres(DATABASE_URL, { max: 1, onnotice: () => {} })));

async function measure(name, url, req, connections = CONNECTIONS, { cpu = false } = {}) {
  process.stderr.write(`bench: ${name} …\n`);
  const run = WRK ? runWrk : runAutocannon;
  await run(url, req, WARMUP, connections);
  if (cpu) await namePostgres();
  const before = cpu ? cpuSnapshot(liveProcesses()) : null;
  const writesBefore = cpu ? writesSnapshot(liveProcesses()) : null;
  const result = { name, ...(await run(url, req, DURATION, connections)) };
  if (cpu) {
    if (req.method !== "GET") await settleEvents();
    await namePostgres();
    result.cpu = cpuPerRequest(before, cpuSnapshot(liveProcesses()), result.requests);
    result.writes = cpuPerRequest(writesBefore, writesSnapshot(liveProcesses()), result.requests);
  }
  return result;
}

/** Latency at a steady offered rate (open-loop), and the CPU per request at that rate. */
async function steady(name, url, req, rate) {
  process.stderr.write(`bench: ${name} at a steady ${rate} req/s …\n`);
  const measured = async () => {
    await namePostgres();
    const before = cpuSnapshot(liveProcesses());
    const writesBefore = writesSnapshot(liveProcesses());
    const r = await steadyLoad(url, req, rate, DURATION, WARMUP);
    if (req.method !== "GET") await settleEvents();
    await namePostgres();
    const n = Math.round(rate * (DURATION + WARMUP));
    return { ...r, cpu: cpuPerRequest(before, cpuSnapshot(liveProcesses()), n), writes: cpuPerRequest(writesBefore, writesSnapshot(liveProcesses()), n) };
  };
  // The autovacuum stand-in's passes go before the window, not inside it (see autovacuum.mjs).
  return autovacuum ? autovacuum.between(measured) : measured();
}

/**
 * One scenario with its three yardsticks: saturated req/s beside its matched baseline (the same
 * statements behind one hop, same run), CPU per request by process, and latency at a steady rate.
 */
async function yardsticks(s, req, url, matchedUrl) {
  const write = req.method !== "GET";
  const mreq = { method: req.method, path: `/${s.matched}`, headers: write ? { "content-type": "application/json" } : {}, body: req.body };
  const rate = write ? STEADY_WRITES : STEADY_READS;
  const connections = s.connections ?? CONNECTIONS;
  // An organization holds at most MAX_LIVE_API_KEYS live keys: the bench's (named "bench") are
  // revoked as they come, in the stack and in the matched copy alike, so every create is a first one.
  const revoker = s.matched === "apikey" ? revokeBenchKeys() : null;
  try {
    const base = await measure(`matched baseline of ${s.name}`, matchedUrl, mreq, connections, { cpu: true });
    // A baseline that fails answers fast: its figures would be a refusal's, and every ratio to it wrong.
    // Up to one in a thousand may be the key mint's cap reached before the revoker's next pass,
    // which moves no figure (13 in one run); more than that is a responder to fix.
    if (base.non2xx > base.requests / 1000) {
      throw new Error(`the matched baseline of ${s.name} answered ${base.non2xx} non-2xx responses: fix the matched responder`);
    }
    if (base.non2xx > 0) process.stderr.write(`bench: the matched baseline of ${s.name} answered ${base.non2xx} of ${base.requests} with a non-2xx response\n`);
    const row = await measure(s.name, url, req, connections, { cpu: true });
    const baseSteady = await steady(`matched baseline of ${s.name}`, matchedUrl, mreq, rate);
    const rowSteady = await steady(s.name, url, req, rate);
    return yardstickRow(rate, base, row, baseSteady, rowSteady);
  } finally {
    await revoker?.stop();
  }
}

/** Revokes the bench's keys every 20 ms until stopped. */
function revokeBenchKeys() {
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  let running = true;
  const loop = (async () => {
    while (running) {
      await sql`update keys.api_keys set revoked_at = now() where name = 'bench' and revoked_at is null`;
      await sql`update matched_keys.api_keys set revoked_at = now() where name = 'bench' and revoked_at is null`.catch(() => {});
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      await sql.end();
    },
  };
}

function yardstickRow(rate, base, row, baseSteady, rowSteady) {
  const { cpu, writes, ...saturated } = row;
  const pick = (r) => ({
    p50_ms: r.p50,
    p99_ms: r.p99,
    max_ms: r.max,
    completed: r.completed,
    non2xx: r.non2xx,
    errors: r.errors,
    lost: r.lost,
    generator_stalls: r.generator_stalls,
    generator_stall_max_ms: r.generator_stall_max,
  });
  return {
    ...saturated,
    baseline_rps: base.rps,
    ratio_to_baseline: row.rps / base.rps,
    steady_rate: rate,
    steady_p50_ms: rowSteady.p50,
    steady_p99_ms: rowSteady.p99,
    cpu_ms_per_request: cpu,
    writes_per_request: writes,
    steady: { ...pick(rowSteady), cpu_ms_per_request: rowSteady.cpu, writes_per_request: rowSteady.writes },
    baseline: {
      rps: base.rps,
      p50_ms: base.p50,
      p99_ms: base.p99,
      non2xx: base.non2xx,
      errors: base.errors,
      cpu_ms_per_request: base.cpu,
      writes_per_request: base.writes,
      steady: { ...pick(baseSteady), cpu_ms_per_request: baseSteady.cpu, writes_per_request: baseSteady.writes },
    },
  };
}

// ---------- storage ceiling and query plan ----------

/**
 * pgbench, same database and connection count: the transaction at the heart of POST /v1/tasks
 * (bump the organization's counter, insert one task row) on a scratch copy of the tables, so the
 * figure is what Postgres alone can do on these cores. Latencies from pgbench's per-transaction log.
 */
function pgbenchInsert() {
  const has = spawnSync("sh", ["-c", "command -v pgbench"], { encoding: "utf8" });
  if (has.status !== 0) {
    process.stderr.write("bench: pgbench not installed; storage ceiling skipped\n");
    return null;
  }
  process.stderr.write("bench: pgbench single-row insert transaction …\n");
  const setup = `
    create schema if not exists pgbench_ceiling;
    create table pgbench_ceiling.org_counters (like tasks.org_counters including all);
    create table pgbench_ceiling.tasks (like tasks.tasks including all);`;
  const psql = spawnSync("psql", [DATABASE_URL, "-v", "ON_ERROR_STOP=1", "-q", "-c", setup], { encoding: "utf8" });
  if (psql.status !== 0) throw new Error(`pgbench setup failed: ${psql.stderr}`);
  const script = join(scratch, "insert.sql");
  writeFileSync(
    script,
    `BEGIN;
INSERT INTO pgbench_ceiling.org_counters AS c (organization_id, last_number) VALUES ('org_bench', 1)
  ON CONFLICT (organization_id) DO UPDATE SET last_number = c.last_number + 1 RETURNING last_number \\gset
INSERT INTO pgbench_ceiling.tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, priority, due_date, story_points, created_at, updated_at)
  VALUES ('org_bench', :last_number, 'usr_bench', 'ver_bench', 1, 'Benchmark task', 'TODO', 'HIGH', '2026-12-31', 3, now(), now());
COMMIT;
`,
  );
  const run = (secs, log) =>
    spawnSync(
      "pgbench",
      [
        "-n",
        "-M",
        "prepared",
        "-c",
        String(CONNECTIONS),
        "-j",
        "2",
        "-T",
        String(secs),
        "-f",
        script,
        ...(log ? ["-l", "--log-prefix", join(scratch, "pgbench")] : []),
        DATABASE_URL,
      ],
      { cwd: scratch, encoding: "utf8" },
    );
  run(WARMUP, false);
  const r = run(DURATION, true);
  if (r.status !== 0) throw new Error(`pgbench failed: ${r.stderr}`);
  const latencies = [];
  for (const f of readdirSync(scratch).filter((n) => n.startsWith("pgbench"))) {
    for (const l of readFileSync(join(scratch, f), "utf8").split("\n")) {
      const cols = l.split(" ");
      if (cols.length >= 3) latencies.push(Number(cols[2]) / 1000);
    }
  }
  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
  return {
    name: "pgbench: counter + task insert tx",
    rps: Number(/tps = ([\d.]+)/.exec(r.stdout)?.[1] ?? NaN),
    p50: q(50),
    p99: q(99),
    non2xx: 0,
    errors: Number(/failed transactions: (\d+)/.exec(r.stdout)?.[1] ?? 0),
  };
}

/**
 * GET /v1/tasks on 100,000 tasks of one organization must stay an index scan. The query is the
 * list query of services/tasks/src/repo/tasks-repo.ts (first page, and a filtered keyset page).
 */
async function explainOn100k() {
  process.stderr.write("bench: EXPLAIN of the task list on 100,000 tasks …\n");
  const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await sql`
      insert into tasks.tasks (organization_id, number, owner_user_id, current_version_id, version_count, title, status, created_at, updated_at, archived)
      select 'org_explain', n, 'usr_explain', 'ver_' || n, 1, 'task ' || n,
        (array['TODO','IN_PROGRESS','IN_REVIEW','COMPLETED','BLOCKED'])[1 + n % 5],
        now() - n * interval '1 second', now() - n * interval '1 second', n % 10 = 0
      from generate_series(1, 100000) n`;
    await sql`analyze tasks.tasks`;
    const plan = async (label, query) => {
      const rows = await sql.unsafe(`explain (analyze, buffers, costs off) ${query}`);
      return `${label}\n${rows.map((r) => `  ${r["QUERY PLAN"]}`).join("\n")}`;
    };
    const cursorAt = (
      await sql`select to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') as at from tasks.tasks where organization_id = 'org_explain' and number = 5000`
    )[0].at;
    return [
      await plan(
        "first page (limit 25):",
        `select * from tasks.tasks where organization_id = 'org_explain' and archived = false order by tasks.updated_at desc, tasks.number desc limit 26`,
      ),
      await plan(
        "status filter, keyset page after T-5000:",
        `select * from tasks.tasks where organization_id = 'org_explain' and archived = false and status = 'BLOCKED' and (updated_at, number) < ('${cursorAt}'::text::timestamp at time zone 'UTC', 5000::bigint) order by tasks.updated_at desc, tasks.number desc limit 26`,
      ),
    ].join("\n\n");
  } finally {
    await sql.end({ timeout: 1 });
  }
}

// ---------- the run ----------

const results = [];
const floors = [];
/** CPU ms per second of every process with the stack up and idle, measured before the yardsticks. */
let idleCpu = null;
const IDLE_SECONDS = 5;
let explainList = null;
let webhooks = null;
let uploads = null;
let imports = null;
let recurrence = null;
let search = null;
let streams = null;
let notifications = null;
let comments = null;
let mcp = null;
let exportsResult = null;
let rewinds = null;
let metrics = null;
try {
  const bare = start("bare fastify", "test/bench/bare-server.mjs", { PORT: "18301" });
  const echo = start("echo responder", "test/bench/echo-responder.mjs", {});
  const hop = start("one hop", "test/bench/hop-server.mjs", { PORT: "18302" });
  await Promise.all([ready(bare), ready(echo), ready(hop)]);
  results.push(await measure("baseline: bare fastify", "http://127.0.0.1:18301", { method: "GET", path: "/" }));
  results.push(await measure("baseline: fastify → NATS → echo", "http://127.0.0.1:18302", { method: "GET", path: "/" }));

  const stackEnv = { DATABASE_URL, PORT: "18303" };
  // Ops ports of the bench's own (not the defaults a `make run` on this host may hold).
  const OPS = { gateway: 18310, keys: 18311, tasks: 18312, boards: 18313, webhooks: 18314, delivery: 18315, notifications: 18316 };
  const ops = (name) => ({ OPS_PORT: String(OPS[name]) });
  start("keys", "services/keys/dist/main.js", { ...stackEnv, ...ops("keys") });
  await until("keys schema", async () => {
    const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      return (await sql`select 1 from information_schema.tables where table_schema = 'keys' and table_name = 'api_keys'`).length === 1;
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
  const tasksProcess = start("tasks", "services/tasks/dist/main.js", { ...stackEnv, ...ops("tasks") });
  await until("tasks schema", async () => {
    const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      return (await sql`select 1 from information_schema.tables where table_schema = 'tasks' and table_name = 'idempotency'`).length === 1;
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
  start("boards", "services/boards/dist/main.js", { ...stackEnv, ...ops("boards") });
  // A service of the stack like the others: every task event passes its consumer, whatever the scenario.
  start("notifications", "services/notifications/dist/main.js", { ...stackEnv, ...ops("notifications") });
  // Webhooks: the receiver is on 127.0.0.1 over http, so the guard is relaxed as for local use.
  const webhookEnv = {
    ...stackEnv,
    WEBHOOK_ALLOW_HTTP: "true",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "true",
    WEBHOOK_TIMEOUT_MS: process.env.BENCH_WEBHOOK_TIMEOUT_MS ?? "15000",
  };
  start("webhooks", "services/webhooks/dist/main.js", { ...webhookEnv, ...ops("webhooks") });
  start("delivery", "services/delivery/dist/main.js", { ...webhookEnv, ...ops("delivery") });
  const receiver = start("webhook receiver", "test/bench/webhook-receiver.mjs", {});
  await ready(receiver);
  const receiverUrl = `http://127.0.0.1:${/ready (\d+)/.exec(receiver.output)[1]}`;
  // The upload scenario's clients all come from 127.0.0.1: the link routes' per-address limit is off.
  const gatewayProcess = start("gateway", "services/gateway/dist/main.js", { ...stackEnv, ...ops("gateway"), LINK_RATE_LIMIT: "off" });
  await until("gateway /readyz", async () => (await fetch("http://127.0.0.1:18303/readyz")).ok);
  // What autovacuum would do on a production server (this machine's has it off): BENCH_AUTOVACUUM=off measures without it.
  if (process.env.BENCH_AUTOVACUUM !== "off") autovacuum = startAutovacuum(DATABASE_URL, { log: (m) => process.stderr.write(`bench: ${m}\n`) });
  const tenant = admin("bootstrap", "--org", "Bench", "--plan", "team", "--email", "bench@example.test");
  // The benchmark measures throughput, not the limiter's refusals. Its lists and searches may run 7 at
  // once, as the matched responder's 7 read connections do (the fair share of a lone tenant is 2).
  admin("set-limits", "--org", tenant.organization_id, "--burst", "1000000000", "--quota", "2000000000", "--scans", "7");
  const ctx = { key: tenant.api_key, organizationId: tenant.organization_id };
  // Tasks to read (T-1 … T-50) before the write scenario adds its own; all 50 on one day's board.
  const post = async (path, body) => {
    const r = await fetch(`http://127.0.0.1:18303${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`seeding ${path} failed: ${r.status} ${await r.text()}`);
    return r.json();
  };
  await until(
    "boards service",
    async () => (await fetch(`http://127.0.0.1:18303/v1/daily-plan?date=${BOARD_DAY}`, { headers: { authorization: `Bearer ${ctx.key}` } })).status === 200,
  );
  for (let i = 0; i < 50; i++) {
    const task = await post("/v1/tasks", { title: `Seed ${i}` });
    await post("/v1/daily-plan/entries", { date: BOARD_DAY, task_id: task.id, section: i % 2 ? "PROGRESS" : "TODO" });
  }
  // BENCH_ONLY=<text>[|<text>…] runs only the scenarios whose name contains one of them (while
  // tuning; BENCH_ONLY=/v1/ runs the six HTTP scenarios of issue 15's targets and nothing else).
  const only = process.env.BENCH_ONLY;
  const picked = (name) => !only || only.split("|").some((part) => name.includes(part));
  // Before the matched responder starts: it copies the tenant's labels and definitions.
  if (SCENARIOS.some((x) => picked(x.name) && x.matched === "create_custom")) ctx.custom = await defineCustomFields(post, tenant.user_id);
  await analyze();
  // The steady-rate floor of this machine with the stack up and idle: the same generator at the
  // read rate against the bare server and the one hop (no database).
  if (SCENARIOS.some((x) => picked(x.name) && x.matched)) {
    for (const [name, port] of [
      ["bare fastify", 18301],
      ["fastify → NATS → echo", 18302],
    ]) {
      const r = await steady(`steady floor: ${name}`, `http://127.0.0.1:${port}`, { method: "GET", path: "/" }, STEADY_READS);
      floors.push({ name, rate: STEADY_READS, p50_ms: r.p50, p99_ms: r.p99, max_ms: r.max });
    }
  }
  for (const c of [bare, hop, echo]) stop(c);
  // The matched baselines' processes, once the tenant and its board exist.
  let matchedUrl = null;
  if (SCENARIOS.some((x) => picked(x.name) && x.matched)) {
    const matched = { org: ctx.organizationId, user: tenant.user_id, taskNumber: 1, boardDay: BOARD_DAY };
    const responder = start("matched responder", "test/bench/matched-responder.mjs", { DATABASE_URL, MATCHED: JSON.stringify(matched) });
    const server = start("matched server", "test/bench/matched-server.mjs", { PORT: "0" });
    await Promise.all([ready(responder), ready(server)]);
    matchedUrl = `http://127.0.0.1:${/ready (\d+)/.exec(server.output)[1]}`;
    // What every process burns with nothing asked of it (pollers, timers, the autovacuum stand-in):
    // at a steady rate it is spread over fewer requests than when saturated.
    process.stderr.write("bench: the stack up and idle …\n");
    await namePostgres();
    const before = cpuSnapshot(liveProcesses());
    await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000));
    await namePostgres();
    idleCpu = cpuPerRequest(before, cpuSnapshot(liveProcesses()), IDLE_SECONDS);
  }
  for (const s of SCENARIOS.filter((x) => picked(x.name))) {
    const req = s.request(ctx);
    if (s.matched) {
      results.push(await yardsticks(s, req, "http://127.0.0.1:18303", matchedUrl));
      if (req.method !== "GET") await analyze();
      continue;
    }
    results.push(await measure(s.name, "http://127.0.0.1:18303", req));
    // A write scenario leaves events behind (outbox relay, webhook fan-out): they are worked off
    // before the next scenario, which would otherwise measure their tail as well as itself.
    if (req.method !== "GET") {
      await settleEvents();
      await analyze();
    }
  }
  if (!only || only.split("|").includes("webhooks")) {
    // The task scenarios above left events for the fan-out consumer: let it catch up first.
    const nc = await connectNats({ url: NATS_URL, name: "bench-wait" });
    const jsm = await jetstreamManager(nc);
    await until(
      "the fan-out consumer to catch up",
      async () => {
        const info = await jsm.consumers.info(`${NAMESPACE}_task_events`, `${NAMESPACE}_webhooks_fanout`);
        return info.num_pending === 0 && info.num_ack_pending === 0;
      },
      300_000,
    );
    await nc.drain();
    webhooks = await webhookScenarios({
      gateway: "http://127.0.0.1:18303",
      key: ctx.key,
      receiver: receiverUrl,
      duration: DURATION,
      warmup: WARMUP,
      log: (m) => process.stderr.write(`${m}\n`),
      deliveryOps: `http://127.0.0.1:${OPS.delivery}`,
    });
  }
  if (!only || only.split("|").includes("streams")) {
    streams = await streamScenarios({
      gateway: "http://127.0.0.1:18303",
      gatewayOps: `http://127.0.0.1:${OPS.gateway}`,
      gatewayPid: gatewayProcess.pid,
      natsUrl: NATS_URL,
      namespace: NAMESPACE,
      duration: DURATION,
      warmup: WARMUP,
      log: (m) => process.stderr.write(`${m}\n`),
    });
  }
  if (!only || only.split("|").includes("notifications")) {
    await settleEvents();
    notifications = await notificationScenarios({
      gateway: "http://127.0.0.1:18303",
      databaseUrl: DATABASE_URL,
      natsUrl: NATS_URL,
      namespace: NAMESPACE,
      duration: NOTIFY_SECONDS,
      warmup: NOTIFY_WARMUP,
      log: (m) => process.stderr.write(`${m}\n`),
    });
    await settleEvents();
  }
  if (!only || only.split("|").includes("comments")) {
    // A comment with one mention beside the plain create, in the same run: saturated and at the
    // steady write rate, CPU per request of every process until the events are settled.
    const target = await commentTarget({
      gateway: "http://127.0.0.1:18303",
      key: ctx.key,
      organizationId: ctx.organizationId,
      natsUrl: NATS_URL,
      namespace: NAMESPACE,
    });
    const create = SCENARIOS.find((x) => x.name === "POST /v1/tasks + Idempotency-Key").request(ctx);
    const comment = {
      method: "POST",
      path: `/v1/tasks/${target.taskId}/comments`,
      headers: { authorization: `Bearer ${ctx.key}`, "content-type": "application/json" },
      body: JSON.stringify({ body: target.body }),
      freshIdempotencyKey: true,
    };
    const cost = async (name, req) => {
      const saturated = await measure(name, "http://127.0.0.1:18303", req, CONNECTIONS, { cpu: true });
      const { cpu, ...steadyFigures } = await steady(name, "http://127.0.0.1:18303", req, STEADY_WRITES);
      return { saturated, steady: { ...steadyFigures, rate: STEADY_WRITES, cpu } };
    };
    const spread = { ...comment, path: undefined, paths: target.spreadIds.map((id) => `/v1/tasks/${id}/comments`) };
    comments = {
      create: await cost("comments: POST /v1/tasks + Idempotency-Key", create),
      comment: await cost("comments: POST /v1/tasks/{id}/comments + Idempotency-Key", comment),
      spread: await cost("comments: POST /v1/tasks/{id}/comments over many tasks + Idempotency-Key", spread),
    };
  }
  if (!only || only.split("|").includes("mcp")) {
    mcp = await mcpScenarios({
      gateway: "http://127.0.0.1:18303",
      key: ctx.key,
      measure: (name, req, connections) => measure(name, "http://127.0.0.1:18303", req, connections, { cpu: true }),
      log: (m) => process.stderr.write(`${m}\n`),
    });
  }
  // After the webhook scenarios, which delete their endpoints (and backlog) when done: the
  // object store's writes here would otherwise weigh on their latency.
  if (!only || only.split("|").includes("uploads")) {
    uploads = await uploadScenarios({
      gateway: "http://127.0.0.1:18303",
      key: ctx.key,
      gatewayPid: gatewayProcess.pid,
      duration: DURATION,
      warmup: WARMUP,
      log: (m) => process.stderr.write(`${m}\n`),
    });
  }
  if (!only || only.split("|").includes("imports")) {
    imports = await importScenarios({
      gateway: "http://127.0.0.1:18303",
      key: ctx.key,
      tasksPid: tasksProcess.pid,
      settle: settleEvents,
      cpu: () => cpuSnapshot(liveProcesses()),
      log: (m) => process.stderr.write(`${m}\n`),
    });
  }
  if (!only || only.split("|").includes("recurrence")) {
    recurrence = await recurrenceScenarios({ databaseUrl: DATABASE_URL, log: (m) => process.stderr.write(`bench: ${m}\n`) });
  }
  if (!only || only.split("|").includes("search")) {
    search = await searchScenarios({
      databaseUrl: DATABASE_URL,
      gateway: "http://127.0.0.1:18303",
      admin,
      measure: (name, req, connections) => measure(name, "http://127.0.0.1:18303", req, connections),
      log: (m) => process.stderr.write(`bench: ${m}\n`),
    });
  }
  if (!only || only.split("|").includes("exports")) {
    exportsResult = await exportScenarios({
      databaseUrl: DATABASE_URL,
      gateway: "http://127.0.0.1:18303",
      admin,
      tasksPid: children.find((c) => c.benchName === "tasks").pid,
      cpu: () => cpuSnapshot(liveProcesses()),
      log: (m) => process.stderr.write(`bench: ${m}\n`),
    });
  }
  if (!only || only.split("|").includes("rewinds")) {
    rewinds = await rewindScenarios({
      databaseUrl: DATABASE_URL,
      gateway: "http://127.0.0.1:18303",
      admin,
      measure: (name, req, connections) => measure(name, "http://127.0.0.1:18303", req, connections),
      steady: (name, req, rate) => steady(name, "http://127.0.0.1:18303", req, rate),
      log: (m) => process.stderr.write(`bench: ${m}\n`),
    });
  }
  // Every process's ops port, the gateway's included (its public port has no /metrics).
  metrics = await metricsSnapshot(Object.entries(OPS).map(([name, port]) => ({ name, url: `http://127.0.0.1:${port}` })));
  if (!only) {
    const pg = pgbenchInsert();
    if (pg) results.push(pg);
    explainList = await explainOn100k();
  }
} finally {
  await cleanup();
}

// ---------- report ----------

const hopResult = results.find((r) => r.name.startsWith("baseline: fastify → NATS"));
const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const rows = results.map((r) => ({ ...r, ratio: hopResult ? r.rps / hopResult.rps : NaN }));
const tool = WRK ? "wrk -t2" : "autocannon";
console.log(
  `\ntasksvc benchmark · ${tool} · node ${process.version} · ${cpus().length} cores · ${CONNECTIONS} connections · ${DURATION}s per scenario (+${WARMUP}s warm-up) · npm run bench\n`,
);
const header = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors", "× one hop"];
const table = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.non2xx), fmt(r.errors), `${r.ratio.toFixed(2)}×`]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const row of table) console.log(line(row));
/** A table with the first column left-aligned and the others right-aligned. */
function printTable(head, body) {
  const w = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i].length)));
  const l = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  ");
  console.log(l(head));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const row of body) console.log(l(row));
}
const yard = rows.filter((r) => r.baseline_rps !== undefined);
if (yard.length) {
  console.log(
    "\nYardsticks · each scenario beside its matched baseline in this run (fastify → one NATS request/reply → the same SQL statements, no pipeline) · steady: open-loop, latency from when each request was due · CPU: user + system ms per request, every process",
  );
  const ms = (n) => (Number.isFinite(n) ? fmt(n, 1) : "-");
  printTable(
    ["scenario", "req/s", "matched req/s", "× matched", "steady req/s", "p50 ms", "p99 ms", "matched p99", "CPU ms/req", "matched CPU"],
    yard.map((r) => [
      r.name,
      fmt(r.rps),
      fmt(r.baseline_rps),
      `${r.ratio_to_baseline.toFixed(2)}×`,
      fmt(r.steady_rate),
      ms(r.steady_p50_ms),
      ms(r.steady_p99_ms),
      ms(r.baseline.steady.p99_ms),
      fmt(r.cpu_ms_per_request.total, 2),
      fmt(r.baseline.cpu_ms_per_request.total, 2),
    ]),
  );
  const plain = yard.find((r) => r.name === "POST /v1/tasks + Idempotency-Key");
  const rich = yard.find((r) => r.name.startsWith("POST /v1/tasks + 10 custom fields"));
  if (plain && rich) {
    const ratio = (a, b) => `${(a.total / b.total).toFixed(2)}×`;
    console.log(
      `${rich.name}: CPU per request ${ratio(rich.cpu_ms_per_request, plain.cpu_ms_per_request)} the plain create's saturated, ` +
        `${ratio(rich.steady.cpu_ms_per_request, plain.steady.cpu_ms_per_request)} steady (target ≤ 1.3×); ` +
        `matched baselines ${ratio(rich.baseline.cpu_ms_per_request, plain.baseline.cpu_ms_per_request)} saturated, ` +
        `${ratio(rich.baseline.steady.cpu_ms_per_request, plain.baseline.steady.cpu_ms_per_request)} steady`,
    );
  }
  // The generator's own stalls delay the requests due meanwhile: a tail with many of them is partly the generator's.
  for (const r of yard)
    console.log(
      `steady generator's own stalls over 10 ms · ${r.name}: ${r.steady.generator_stalls} (longest ${ms(r.steady.generator_stall_max_ms)} ms), its matched baseline's ${r.baseline.steady.generator_stalls} (longest ${ms(r.baseline.steady.generator_stall_max_ms)} ms)`,
    );
  for (const f of floors)
    console.log(
      `steady floor at ${fmt(f.rate)} req/s, the stack up and idle: ${f.name} p50 ${ms(f.p50_ms)} ms, p99 ${ms(f.p99_ms)} ms, max ${ms(f.max_ms)} ms`,
    );
  // Postgres's parts follow its row, the total comes last.
  const inOrder = (keys) => {
    const parts = keys.filter((k) => k.startsWith(POSTGRES_PART)).sort();
    const rest = keys.filter((k) => !k.startsWith(POSTGRES_PART) && k !== "total");
    const at = rest.indexOf("postgres") + 1;
    return [...rest.slice(0, at), ...parts, ...rest.slice(at), ...(keys.includes("total") ? ["total"] : [])];
  };
  if (idleCpu) {
    console.log(
      `\nCPU ms per second, the stack up and idle (${IDLE_SECONDS} s, before the yardsticks): at a steady rate of N req/s, each request carries 1/N of it`,
    );
    printTable(
      ["process", "ms/s"],
      inOrder(Object.keys(idleCpu)).map((k) => [k, fmt(idleCpu[k], 1)]),
    );
  }
  for (const r of yard) {
    console.log(`\nCPU ms per request · ${r.name} (saturated at ${fmt(r.rps)} req/s · steady at ${fmt(r.steady_rate)}) against its matched baseline`);
    const procs = inOrder([
      ...new Set([r.cpu_ms_per_request, r.steady.cpu_ms_per_request, r.baseline.cpu_ms_per_request, r.baseline.steady.cpu_ms_per_request].flatMap(Object.keys)),
    ]);
    const c = (o, k) => (o?.[k] === undefined ? "-" : fmt(o[k], 3));
    const w = (o, k) => (o?.[k] === undefined ? "-" : fmt(o[k], 1));
    printTable(
      ["process", "saturated", "steady", "matched saturated", "matched steady", "writes/req steady", "matched writes/req steady"],
      procs.map((k) => [
        k,
        c(r.cpu_ms_per_request, k),
        c(r.steady.cpu_ms_per_request, k),
        c(r.baseline.cpu_ms_per_request, k),
        c(r.baseline.steady.cpu_ms_per_request, k),
        w(r.steady.writes_per_request, k),
        w(r.baseline.steady.writes_per_request, k),
      ]),
    );
  }
}
if (webhooks) {
  const { rate, overloadRate, rateLimit, a, r, b, c } = webhooks;
  console.log(`\nWebhook delivery · ${rate} tasks/s × 10 endpoints = ${fmt(rate * 10)} deliveries/s due · latency from the task's commit to the receiver`);
  const wh = ["scenario", "deliveries/s", "delivered/due", "p50 ms", "p99 ms", "failed creates"];
  const wt = [
    ["(a) fan-out, 10 endpoints", a],
    [`(r) + 1 endpoint limited to ${rateLimit}/s (the 10)`, r],
    ["(b) + 1 hanging endpoint (healthy 10)", b],
    [`(c) capacity: ${overloadRate} tasks/s offered, as (b)`, c],
  ].map(([n, r]) => [n, fmt(r.deliveriesPerSecond), `${fmt(r.delivered)}/${fmt(r.due)}`, fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.failedCreates)]);
  const ww = wh.map((h, i) => Math.max(h.length, ...wt.map((row) => row[i].length)));
  const wl = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(ww[i]) : c.padStart(ww[i]))).join("  ");
  console.log(wl(wh));
  console.log(ww.map((w) => "-".repeat(w)).join("  "));
  for (const row of wt) console.log(wl(row));
  console.log(`(b) healthy p99 / (a) p99: ${(b.p99 / a.p99).toFixed(2)}×`);
  console.log(
    `(r) / (a), the 10 unlimited: deliveries/s ${(r.deliveriesPerSecond / a.deliveriesPerSecond).toFixed(2)}×, p50 ${(r.p50 / a.p50).toFixed(2)}×, p99 ${(r.p99 / a.p99).toFixed(2)}× · the limited one: ${fmt(r.limitedPerSecond, 1)} deliveries/s (limit ${rateLimit}; its send times allow ${fmt(rateLimit / 1.05, 1)}), ${fmt(r.deferred)} attempts deferred`,
  );
}
if (uploads) {
  const { clients, a, b } = uploads;
  console.log(`\nAttachment uploads (JetStream store, through the gateway) · ${clients} clients · 1 MiB files, start → PUT → register`);
  console.log(`files/s ${fmt(a.files, 1)} · MiB/s ${fmt(a.mibPerSecond, 1)} · per file p50 ${fmt(a.p50, 1)} ms, p99 ${fmt(a.p99, 1)} ms`);
  console.log(
    `one 200 MiB file: ${fmt(b.seconds, 1)} s (${fmt(b.mibPerSecond, 1)} MiB/s); gateway RSS idle ${fmt(b.idle, 1)} MiB, peak ${fmt(b.peak, 1)} MiB (+${fmt(b.peak - b.idle, 1)} MiB)`,
  );
}
if (imports) printImports(imports);
if (recurrence) {
  console.log("\nRecurrence scheduler (issue 16)");
  for (const r of recurrence) {
    console.log(
      `${fmt(r.series)} daily series in ${fmt(r.orgs)} organization(s) · one tick at the next day made ${fmt(r.made)} occurrences in ${fmt(r.seconds, 2)} s: ${fmt(r.perSecond)} series advanced/s; the next tick read them all, found nothing due and put them to sleep: ${fmt(r.scanMs, 1)} ms; a tick with all asleep: ${fmt(r.idleMs, 1)} ms (${fmt(r.scanMs / r.idleMs, 0)}× less; made ${r.again})`,
    );
  }
}
if (search) printSearch(search);
if (exportsResult) printExports(exportsResult);
if (rewinds) printRewinds(rewinds);
if (streams) printStreams(streams);
if (notifications || comments) printNotifications(notifications, comments);
if (mcp) printMcp(mcp);
if (metrics) printMetricsSnapshot(metrics);
if (explainList) console.log(`\nEXPLAIN ANALYZE, GET /v1/tasks on 100,000 tasks in one organization:\n\n${explainList}`);
mkdirSync(new URL("./results", import.meta.url), { recursive: true });
writeFileSync(
  new URL("./results/latest.json", import.meta.url),
  `${JSON.stringify({ at: new Date().toISOString(), tool, node: process.version, cores: cpus().length, connections: CONNECTIONS, duration: DURATION, results: rows, steady_floors: floors, idle_cpu_ms_per_s: idleCpu, webhooks, uploads, imports, recurrence, search, exports: exportsResult, rewinds, streams, notifications, comments, mcp, metrics, explain: explainList }, null, 2)}\n`,
);
