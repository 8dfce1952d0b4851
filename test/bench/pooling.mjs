#!/usr/bin/env node
// What transaction pooling costs: the same statements through the services' own pool (createDb)
// three ways, in one run: straight to Postgres with named prepared statements (the default), straight
// to Postgres with unnamed ones (what DATABASE_POOL_MODE=transaction does to the driver), and through
// PgBouncer in transaction mode (4 server connections). For each: statements/s at 16 in flight, CPU
// ms per statement of Postgres (every process), PgBouncer and this client, and p50/p99 at a steady
// rate (reads 1,000/s, write transactions 100/s). Two workloads: a read by primary key (autocommit), and a transaction that
// inserts a row and reads it back. Rounds interleave the three ways; medians are printed.
//
//   node test/bench/pooling.mjs            (needs Postgres on 127.0.0.1:5432 and Debian's pgbouncer)
import { execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createDb, ensureDatabase } from "@tasksvc/db";
import postgres from "postgres";
import { cpuSnapshot } from "./yardsticks.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
/** The steady rates: well inside each workload's capacity on a 2-core machine, so p99 is latency, not queueing. */
const RATE = { read: 1000, "write tx": 100 };
const user = userInfo().username;
const dbName = `tasksvc_bench_pool_${randomBytes(4).toString("hex")}`;
const direct = `postgres://${user}@127.0.0.1:5432/${dbName}`;

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const open = (port) =>
  new Promise((resolve) => {
    const s = connect({ host: "127.0.0.1", port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });

async function startBouncer() {
  const dir = mkdtempSync(join(tmpdir(), "tasksvc-bench-pgbouncer-"));
  const port = await freePort();
  writeFileSync(join(dir, "users.txt"), `"${user}" ""\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    `[databases]\nbench = host=127.0.0.1 port=5432 dbname=${dbName} connect_query='SET search_path TO bench'\n` +
      `[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = ${port}\nunix_socket_dir =\nauth_type = trust\nauth_file = ${join(dir, "users.txt")}\n` +
      `pool_mode = transaction\ndefault_pool_size = 4\nmax_client_conn = 200\nlogfile = ${join(dir, "pgbouncer.log")}\n`,
  );
  // PgBouncer refuses to run as root.
  const ids =
    process.getuid?.() === 0
      ? { uid: Number(execFileSync("id", ["-u", "postgres"]).toString()), gid: Number(execFileSync("id", ["-g", "postgres"]).toString()) }
      : {};
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid);
  const child = spawn(process.env.PGBOUNCER || "pgbouncer", [join(dir, "pgbouncer.ini")], { stdio: "ignore", ...ids });
  for (let i = 0; i < 200 && !(await open(port)); i++) await new Promise((r) => setTimeout(r, 50));
  const stop = () => {
    child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://${user}@127.0.0.1:${port}/bench`, pid: child.pid, stop };
}

const WAYS = [
  { name: "direct, named statements", url: () => direct, poolMode: "session" },
  { name: "direct, unnamed statements", url: () => direct, poolMode: "transaction" },
  { name: "PgBouncer (transaction mode)", url: (b) => b.url, poolMode: "transaction" },
];
const WORK = {
  read: (db, org, i) => db.sql`select * from bench.items where org = ${org} and n = ${i % 10_000}`,
  "write tx": (db, org, i) =>
    db.tx(async (t) => {
      await t`insert into bench.writes (org, n, title) values (${org}, ${i}, ${"a title of some length"})`;
      return t`select * from bench.writes where org = ${org} and n = ${i}`;
    }),
};

async function measure(way, bouncer, work, rate, org, offset) {
  const db = createDb({ url: way.url(bouncer), schema: "bench", max: 10, txMax: 3, poolMode: way.poolMode });
  let i = offset;
  try {
    for (let w = 0; w < 200; w++) await work(db, org, i++); // warm: connections, plans
    const before = cpuSnapshot({ pgbouncer: bouncer.pid });
    const client0 = process.cpuUsage();
    let done = 0;
    const until = performance.now() + SECONDS * 1000;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (performance.now() < until) {
          await work(db, org, i++);
          done++;
        }
      }),
    );
    const after = cpuSnapshot({ pgbouncer: bouncer.pid });
    const c = process.cpuUsage(client0);
    const cpu = (k) => (after[k] - before[k]) / done;
    // Open loop: each statement due every 1/rate s, latency counted from when it was due.
    const lat = [];
    const start = performance.now();
    const pending = [];
    for (let k = 0; k < rate * SECONDS; k++) {
      const due = start + (k * 1000) / rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pending.push(work(db, org, i++).then(() => lat.push(performance.now() - due)));
    }
    await Promise.all(pending);
    lat.sort((a, b) => a - b);
    return {
      per_s: done / SECONDS,
      postgres_ms: cpu("postgres"),
      pgbouncer_ms: cpu("pgbouncer"),
      client_ms: (c.user + c.system) / 1000 / done,
      p50: lat[Math.floor(lat.length * 0.5)],
      p99: lat[Math.floor(lat.length * 0.99)],
    };
  } finally {
    await db.end({ timeout: 1 });
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

await ensureDatabase(direct);
const admin = postgres(direct, { max: 1, onnotice: () => {} });
await admin.unsafe(`create schema bench; create table bench.items (org uuid, n int, title text, body text, primary key (org, n));
  create table bench.writes (org uuid, n int, title text, primary key (org, n))`);
const org = "00000000-0000-4000-8000-000000000001";
await admin`insert into bench.items select ${org}::uuid, g, 'title ' || g, repeat('x', 200) from generate_series(0, 9999) g`;
await admin`analyze bench.items`;
const bouncer = await startBouncer();
try {
  const results = {};
  let offset = 0;
  for (let round = 0; round < ROUNDS; round++)
    for (const [wname, work] of Object.entries(WORK))
      for (const way of WAYS) {
        const r = await measure(way, bouncer, work, RATE[wname], org, (offset += 1_000_000));
        (results[`${wname}|${way.name}`] ??= []).push(r);
      }
  console.log(`statement pooling, medians of ${ROUNDS} rounds (${SECONDS} s each; CPU ms per statement)`);
  console.log("workload   way                            stmt/s  postgres  pgbouncer  client   p50 ms  p99 ms (steady: reads 1,000/s, write tx 100/s)");
  const out = [];
  for (const [key, rs] of Object.entries(results)) {
    const [wname, way] = key.split("|");
    const m = Object.fromEntries(Object.keys(rs[0]).map((k) => [k, median(rs.map((r) => r[k]))]));
    out.push({ workload: wname, way, ...m });
    console.log(
      `${wname.padEnd(10)} ${way.padEnd(30)} ${String(Math.round(m.per_s)).padStart(6)}  ${m.postgres_ms.toFixed(3).padStart(8)}  ${m.pgbouncer_ms.toFixed(3).padStart(9)}  ${m.client_ms.toFixed(3).padStart(6)}  ${m.p50.toFixed(2).padStart(7)} ${m.p99.toFixed(2).padStart(7)}`,
    );
  }
  writeFileSync(
    new URL("./results/pooling.json", import.meta.url),
    `${JSON.stringify({ date: new Date().toISOString(), rounds: ROUNDS, seconds: SECONDS, results: out }, null, 2)}\n`,
  );
} finally {
  bouncer.stop();
  await admin.end({ timeout: 1 });
  const drop = postgres(`postgres://${user}@127.0.0.1:5432/postgres`, { max: 1, onnotice: () => {} });
  await drop.unsafe(`drop database if exists ${dbName} with (force)`);
  await drop.end({ timeout: 1 });
}
