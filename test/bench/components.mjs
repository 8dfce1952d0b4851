#!/usr/bin/env node
// Component benchmarks (npm run bench:components): each changed part alone, where the full stack's
// figures on a shared 2-core machine swing by more than the difference being looked for.
//
//   gateway   the real buildGateway with in-process stubs for authentication, charging, the
//             Idempotency-Key store and the services: HTTP + the request pipeline only
//             (GET /v1/organizations, and POST /v1/tasks with an Idempotency-Key), via wrk
//   tasks     the tasks service alone over NATS request/reply: createTask with an
//             Idempotency-Key, 50 in flight (its own database and namespace, dropped after)
//
// `node test/bench/components.mjs [OTHER_TREE]` measures this tree, and with OTHER_TREE (another
// built checkout, e.g. a git worktree of an earlier commit) both, alternating, ROUNDS times, and
// prints the medians side by side. Asserts nothing. Traffic goes to 127.0.0.1 only; ports are free ones.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
const other = process.argv[2];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_DURATION ?? 5);
const WRK = spawnSync("wrk", ["--version"]).error ? undefined : "wrk";

/** Runs inside a child process: a gateway of `tree` on a free port, with stubs behind it. */
async function gatewayChild(tree) {
  const { buildGateway } = await import(`${tree}/services/gateway/dist/app.js`);
  const { createLogger } = await import(`${tree}/libs/logger/dist/index.js`);
  const now = new Date();
  const identity = {
    kind: "api_key",
    credential_id: "key_1",
    organization_id: "org_1",
    user_id: "usr_1",
    role: "owner",
    scopes: ["workspaces:read", "tasks:read", "tasks:write"],
    plan: "pro",
    entitlements: ["public_api", "outbound_webhooks"],
    expires_at: null,
  };
  const charge = {
    burst: { limit: 1e9, windowSeconds: 60, remaining: 1e9, resetAt: now },
    quota: { limit: 1e9, used: 1, periodStart: now, periodEnd: now },
  };
  const org = { data: [{ id: "org_1", name: "Acme", plan: "pro", created_at: now.toISOString() }], has_more: false, next_cursor: null };
  const task = { id: "T-1", title: "Benchmark task", status: "TODO", created_at: now.toISOString() };
  const stub = { call: async (op) => (op === "createTask" ? task : org) };
  const app = buildGateway({
    log: createLogger({ service: "bench", level: "silent" }),
    auth: { authenticate: async () => identity, stop() {} },
    clients: { keys: stub, tasks: stub, boards: stub, webhooks: stub },
    sql: {},
    nc: {},
    // Both shapes of the records' writes, so that a tree from before their batching runs too.
    repo: {
      claimIdempotencyKey: async () => true,
      claimIdempotencyKeys: async (claims) => claims.map(() => true),
      storeIdempotentOutcome: async () => {},
      storeIdempotentOutcomes: async () => {},
      releaseIdempotencyKey: async () => {},
    },
    cursors: { wrap: (_r, _q, raw) => raw, unwrap: (_r, _q, c) => c },
    charger: { charge: async () => charge, close: async () => {} },
    bodyLimit: 1 << 20,
    idempotencyLeaseMs: 1000,
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  process.stdout.write(`${app.server.address().port}\n`);
  process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
}

/** Runs inside a child process: the tasks service of `tree`, then createTask at 50 in flight. */
async function tasksChild(tree) {
  const mod = await import(`${tree}/services/tasks/dist/index.js`);
  const { parseConfig } = await import(`${tree}/libs/config/dist/index.js`);
  const { createLogger } = await import(`${tree}/libs/logger/dist/index.js`);
  const { connectNats, client, deleteStreams } = await import(`${tree}/libs/nats/dist/index.js`);
  const { tasksRpc } = await import(`${tree}/libs/contracts/dist/index.js`);
  const postgres = (await import(`${tree}/node_modules/postgres/src/index.js`)).default;
  const suffix = randomBytes(4).toString("hex");
  const pgBase = process.env.DATABASE_URL ?? "postgres://127.0.0.1:5432/postgres";
  const dbUrl = new URL(pgBase);
  dbUrl.pathname = `/tasksvc_bench_tasks_${suffix}`;
  const env = {
    DATABASE_URL: dbUrl.toString(),
    NATS_URL: process.env.NATS_URL ?? "nats://127.0.0.1:4222",
    NATS_NAMESPACE: `bench_tasks_${suffix}`,
    LOG_LEVEL: "warn",
  };
  const log = createLogger({ service: "bench", level: "warn" });
  // The service's start as that tree has it: a runtime definition, or the older startTasks().
  const running = mod.service
    ? await (await import(`${tree}/libs/runtime/dist/index.js`)).startService(mod.service, parseConfig(mod.service.config, env), log)
    : await mod.startTasks(parseConfig(mod.TasksConfig, env), log);
  const nc = await connectNats({ url: env.NATS_URL, name: "bench" });
  try {
    const tasks = client(nc, tasksRpc, { namespace: env.NATS_NAMESPACE, timeoutMs: 10_000 });
    const body = { title: "Benchmark task", priority: "HIGH", due_date: "2026-12-31", story_points: 3 };
    let n = 0;
    let seq = 0;
    const ctx = () => ({
      request_id: "bench",
      organization_id: "org_bench",
      user_id: "usr_bench",
      credential_id: "key_bench",
      scopes: ["tasks:write"],
      plan: "pro",
      idempotency_key: `k${seq++}`,
    });
    const loop = async (until) => {
      while (Date.now() < until) {
        await tasks.call("createTask", body, ctx());
        n++;
      }
    };
    await Promise.all(Array.from({ length: 50 }, () => loop(Date.now() + 2000)));
    n = 0;
    const t0 = Date.now();
    await Promise.all(Array.from({ length: 50 }, () => loop(t0 + SECONDS * 1000)));
    process.stdout.write(`${Math.round(n / ((Date.now() - t0) / 1000))}\n`);
  } finally {
    await running.stop();
    await deleteStreams(nc, `${env.NATS_NAMESPACE}_`);
    await deleteStreams(nc, `OBJ_${env.NATS_NAMESPACE}_`);
    await nc.drain();
    const sql = postgres(pgBase, { max: 1, onnotice: () => {} });
    await sql.unsafe(`drop database if exists "tasksvc_bench_tasks_${suffix}" with (force)`);
    await sql.end();
  }
  process.exit(0);
}

function child(kind, tree) {
  return spawn(process.execPath, [fileURLToPath(import.meta.url), `--${kind}`, tree], { stdio: ["ignore", "pipe", "inherit"] });
}

function firstLine(proc) {
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      const i = out.indexOf("\n");
      if (i >= 0) resolve(out.slice(0, i));
    });
    proc.on("exit", (code) => reject(new Error(`benchmark child exited (${code}) before answering`)));
  });
}

const WRK_POST = `wrk.method = "POST"
wrk.body = '{"title":"Benchmark task","priority":"HIGH","due_date":"2026-12-31","story_points":3}'
wrk.headers["content-type"] = "application/json"
wrk.headers["idempotency-key"] = "bench"
`;

async function gatewayRun(tree) {
  const proc = child("gateway", tree);
  const port = await firstLine(proc);
  const script = join(tmpdir(), `bench-post-${process.pid}.lua`);
  writeFileSync(script, WRK_POST);
  const rps = (path, extra = []) => {
    const args = ["-t1", "-c50", `-d${SECONDS}s`, "-H", "authorization: Bearer bench", ...extra, `http://127.0.0.1:${port}${path}`];
    spawnSync(WRK, [...args.slice(0, 2), "-d1s", ...args.slice(3)]);
    const r = spawnSync(WRK, args, { encoding: "utf8" });
    return Number(/Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1] ?? Number.NaN);
  };
  const result = { list: rps("/v1/organizations"), create: rps("/v1/tasks", ["-s", script]) };
  proc.kill("SIGTERM");
  return result;
}

async function tasksRun(tree) {
  return Number(await firstLine(child("tasks", tree)));
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function bench() {
  if (!WRK) {
    console.error("components: wrk is not installed (apt-get install wrk); the gateway part needs it");
    process.exit(1);
  }
  const trees = other ? [other.replace(/\/$/, ""), here] : [here];
  const rows = new Map(trees.map((t) => [t, { list: [], create: [], tasks: [] }]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const tree of trees) {
      process.stderr.write(`components: round ${round}, ${tree} …\n`);
      const g = await gatewayRun(tree);
      const t = await tasksRun(tree);
      const row = rows.get(tree);
      row.list.push(g.list);
      row.create.push(g.create);
      row.tasks.push(t);
    }
  }
  const fmt = (n) => Math.round(n).toLocaleString("en-US");
  console.log(`\ncomponent benchmarks · median of ${ROUNDS} alternating rounds · ${SECONDS}s each · req/s\n`);
  console.log(["tree", "gateway GET /v1/organizations", "gateway POST /v1/tasks + key", "tasks createTask (NATS)"].join(" | "));
  for (const [tree, r] of rows) {
    console.log([tree, fmt(median(r.list)), fmt(median(r.create)), fmt(median(r.tasks))].join(" | "));
    console.log(`  runs: ${r.list.map(fmt).join(", ")} | ${r.create.map(fmt).join(", ")} | ${r.tasks.map(fmt).join(", ")}`);
  }
}

const [mode, tree] = process.argv.slice(2);
if (mode === "--gateway") await gatewayChild(tree);
else if (mode === "--tasks") await tasksChild(tree);
else await bench();
