#!/usr/bin/env node
// Benchmark harness (npm run bench / make bench). Prints figures, asserts nothing.
//
// In one run: two baselines (a bare fastify route; fastify → NATS request/reply → echo responder in
// another process, the floor of one hop) and the full stack, each service in its own process as in
// production, on a fresh database and NATS namespace. Every scenario gets a warm-up, then a measured
// run at CONNECTIONS connections; req/s is also shown as a ratio of the one-hop baseline.
// Later issues add scenarios to SCENARIOS below. Traffic goes to 127.0.0.1 only.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import postgres from "postgres";

const root = fileURLToPath(new URL("../..", import.meta.url));
const DURATION = Number(process.env.BENCH_DURATION ?? 10);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const NATS_URL = process.env.NATS_URL ?? "nats://127.0.0.1:4222";
const PG_BASE = process.env.DATABASE_URL ?? "postgres://127.0.0.1:5432/postgres";
const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
const NAMESPACE = `bench_${suffix}`;
const dbUrl = new URL(PG_BASE);
dbUrl.pathname = `/tasksvc_bench_${suffix}`;
const DATABASE_URL = dbUrl.toString();

const children = [];
function start(name, script, env) {
  const child = spawn(process.execPath, [script], { cwd: root, env: { ...process.env, LOG_LEVEL: "warn", NATS_URL, NATS_NAMESPACE: NAMESPACE, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  child.output = "";
  child.stdout.on("data", (d) => (child.output += d));
  child.stderr.on("data", (d) => (child.output += d));
  child.on("exit", (code) => {
    if (!cleaningUp && !child.stopping && code !== 0) {
      console.error(`${name} exited with ${code}:\n${child.output}`);
      cleanup().then(() => process.exit(1));
    }
  });
  child.benchName = name;
  children.push(child);
  return child;
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
const httpOk = (url) => until(url, async () => (await fetch(url)).ok);

let cleaningUp = false;
async function cleanup() {
  cleaningUp = true;
  for (const c of children) c.kill("SIGTERM");
  // A child ended by a signal has a signalCode and no exitCode.
  await Promise.all(children.map((c) => (c.exitCode !== null || c.signalCode !== null ? null : new Promise((r) => c.once("exit", r)))));
  const u = new URL(DATABASE_URL);
  const name = u.pathname.slice(1);
  u.pathname = "/postgres";
  const sql = postgres(u.toString(), { max: 1, onnotice: () => {} });
  await sql.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
  await sql.end({ timeout: 1 });
}
process.on("SIGINT", () => cleanup().then(() => process.exit(130)));

function admin(...args) {
  const r = spawnSync(process.execPath, ["tools/admin/dist/main.js", ...args, "--json"], { cwd: root, env: { ...process.env, NATS_URL, NATS_NAMESPACE: NAMESPACE }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`admin ${args[0]} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function run(opts, duration) {
  return new Promise((resolve, reject) => {
    autocannon({ connections: CONNECTIONS, duration, ...opts }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

/** `options` is a factory: autocannon mutates the request objects it is given. */
async function measure(name, options) {
  process.stderr.write(`bench: ${name} …\n`);
  await run(options(), WARMUP);
  const r = await run(options(), DURATION);
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts, total: r.requests.total };
}

/** Full-stack scenarios; later issues add theirs here. */
const SCENARIOS = [
  { name: "GET /v1/organizations", request: ({ key }) => ({ method: "GET", path: "/v1/organizations", headers: { authorization: `Bearer ${key}` } }) },
  {
    name: "POST /v1/api-keys + Idempotency-Key",
    request: ({ key }) => ({
      method: "POST",
      path: "/v1/api-keys",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "bench" }),
      // A fresh key per request: each one is a first execution (claim, execute, store).
      setupRequest: (req) => ({ ...req, headers: { ...req.headers, "idempotency-key": randomUUID() } }),
    }),
  },
];

const results = [];
try {
  const bare = start("bare fastify", "test/bench/bare-server.mjs", { PORT: "18301" });
  const echo = start("echo responder", "test/bench/echo-responder.mjs", {});
  const hop = start("one hop", "test/bench/hop-server.mjs", { PORT: "18302" });
  await Promise.all([ready(bare), ready(echo), ready(hop)]);
  results.push(await measure("baseline: bare fastify", () => ({ url: "http://127.0.0.1:18301/" })));
  results.push(await measure("baseline: fastify → NATS → echo", () => ({ url: "http://127.0.0.1:18302/" })));
  for (const c of [bare, hop, echo]) {
    c.stopping = true;
    c.kill("SIGTERM");
  }

  const stackEnv = { DATABASE_URL, PORT: "18303" };
  start("keys", "services/keys/dist/main.js", stackEnv);
  await until("keys schema", async () => {
    const sql = postgres(DATABASE_URL, { max: 1, onnotice: () => {} });
    try {
      return (await sql`select 1 from information_schema.tables where table_schema = 'keys' and table_name = 'api_keys'`).length === 1;
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
  start("gateway", "services/gateway/dist/main.js", stackEnv);
  await httpOk("http://127.0.0.1:18303/readyz");
  const tenant = admin("bootstrap", "--org", "Bench", "--plan", "team", "--email", "bench@example.test");
  // The benchmark measures throughput, not the limiter's refusals.
  admin("set-limits", "--org", tenant.organization_id, "--burst", "1000000000", "--quota", "2000000000");
  const ctx = { key: tenant.api_key, organizationId: tenant.organization_id };
  for (const s of SCENARIOS) results.push(await measure(s.name, () => ({ url: "http://127.0.0.1:18303", requests: [s.request(ctx)] })));
} finally {
  await cleanup();
}

const hop = results.find((r) => r.name.startsWith("baseline: fastify → NATS"));
const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const rows = results.map((r) => ({ ...r, ratio: hop ? r.rps / hop.rps : NaN }));
console.log(`\ntasksvc benchmark · node ${process.version} · ${cpus().length} cores · ${CONNECTIONS} connections · ${DURATION}s per scenario (+${WARMUP}s warm-up) · npm run bench\n`);
const header = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors", "× one hop"];
const table = rows.map((r) => [r.name, fmt(r.rps), fmt(r.p50, 1), fmt(r.p99, 1), fmt(r.non2xx), fmt(r.errors), `${r.ratio.toFixed(2)}×`]);
const widths = header.map((h, i) => Math.max(h.length, ...table.map((row) => row[i].length)));
const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
console.log(line(header));
console.log(widths.map((w) => "-".repeat(w)).join("  "));
for (const row of table) console.log(line(row));
mkdirSync(new URL("./results", import.meta.url), { recursive: true });
writeFileSync(new URL("./results/latest.json", import.meta.url), `${JSON.stringify({ at: new Date().toISOString(), node: process.version, cores: cpus().length, connections: CONNECTIONS, duration: DURATION, results: rows }, null, 2)}\n`);
