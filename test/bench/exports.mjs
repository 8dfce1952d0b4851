// Export scenarios of the benchmark (BENCH_ONLY=exports), run by run.mjs on its stack.
//
// One organization of BENCH_EXPORT_TASKS tasks (1,000,000 by default) seeded by SQL with the search
// scenarios' generator (members, labels, custom field values, one version each), one task in ten
// then made a subtask of the task before it, so the export walks two levels of the parent tree.
// Then one export in each format, one at a time, through the API (POST, then GET until it
// succeeded), while the tasks process's resident memory is sampled every 100 ms from /proc:
// printed are tasks/s, the file's size, and the RSS before, its peak during the export and the
// growth (VmHWM too, the process's peak since it started). The baseline, in the same run: the same
// tasks and versions read by server-side cursors and turned into JSON lines in this process with
// nothing else (no lookups, no file, no upload): what reading the rows alone costs on this machine.
// Asserts nothing.
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { seedSearchData } from "./search.mjs";
import { cpuPerRequest } from "./yardsticks.mjs";

const SIZE = Number(process.env.BENCH_EXPORT_TASKS ?? 1_000_000);
/** An export of a million tasks with their history writes gigabytes; generous. */
const DEADLINE_MS = 60 * 60_000;

/** VmRSS and VmHWM of a process, in MiB. */
function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? Number.NaN);
  return { rss: kib("VmRSS") / 1024, hwm: kib("VmHWM") / 1024 };
}

/** Samples RSS every 100 ms until stopped; answers the highest. */
function sampler(pid) {
  let peak = memoryOf(pid).rss;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, memoryOf(pid).rss);
    } catch {
      // The process is gone; the run fails on its own.
    }
  }, 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, memoryOf(pid).rss);
  };
}

async function call(gateway, key, method, path, body) {
  const r = await fetch(`${gateway}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

async function oneExport({ gateway, key, tasksPid, databaseUrl, format, cpu, log }) {
  const cpuBefore = cpu();
  const before = memoryOf(tasksPid);
  const stop = sampler(tasksPid);
  const t0 = performance.now();
  const started = await call(gateway, key, "POST", "/v1/exports", { format });
  let e = started;
  let lastLog = 0;
  while (e.status !== "succeeded") {
    if (e.status === "failed") throw new Error(`the ${format} export failed: ${JSON.stringify(e.error)}`);
    if (performance.now() - t0 > DEADLINE_MS) throw new Error(`the ${format} export did not finish within ${DEADLINE_MS / 60_000} min`);
    await new Promise((r) => setTimeout(r, 250));
    e = await call(gateway, key, "GET", `/v1/exports/${started.id}`);
    if (performance.now() - lastLog > 10_000) {
      lastLog = performance.now();
      log(`exports: ${format} ${e.status} ${e.progress.done.toLocaleString("en-US")}/${e.progress.total.toLocaleString("en-US")}`);
    }
  }
  const seconds = (performance.now() - t0) / 1000;
  const peak = stop();
  const cpuPer1000 = cpuPerRequest(cpuBefore, cpu(), e.progress.done / 1000);
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [row] =
      await sql`select file_size::bigint as bytes, extract(epoch from completed_at - created_at)::float8 as job from tasks.exports where id = ${started.id}`;
    return {
      format,
      tasks: e.progress.done,
      seconds,
      job_seconds: row.job,
      tasks_per_second: e.progress.done / seconds,
      bytes: Number(row.bytes),
      rss_before_mib: before.rss,
      rss_peak_mib: peak,
      rss_growth_mib: peak - before.rss,
      hwm_mib: memoryOf(tasksPid).hwm,
      cpu_ms_per_1000_tasks: cpuPer1000,
    };
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** The floor: the same tasks and versions through cursors, each row made a JSON line and dropped. */
async function cursorBaseline(databaseUrl, org) {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  const t0 = performance.now();
  let rows = 0;
  let bytes = 0;
  try {
    await sql.begin("isolation level repeatable read read only", async (tx) => {
      await tx`set local statement_timeout = 0`;
      for (const cursor of [
        tx`select * from tasks.tasks where organization_id = ${org} order by number`.cursor(5000),
        tx`select * from tasks.task_versions where organization_id = ${org} order by task_number, seq`.cursor(5000),
      ]) {
        for await (const chunk of cursor) {
          for (const r of chunk) bytes += JSON.stringify(r).length + 1;
          rows += chunk.length;
        }
      }
    });
  } finally {
    await sql.end({ timeout: 1 });
  }
  const seconds = (performance.now() - t0) / 1000;
  return { rows, seconds, rows_per_second: rows / seconds, bytes };
}

/** `cpu()`: CPU ms so far by process (yardsticks' cpuSnapshot). */
export async function exportScenarios({ databaseUrl, gateway, admin, tasksPid, cpu, log }) {
  const t = admin("bootstrap", "--org", `Export ${SIZE}`, "--plan", "team", "--email", `export-${SIZE}@example.test`);
  admin("set-limits", "--org", t.organization_id, "--burst", "1000000000", "--quota", "2000000000");
  const tenant = { size: SIZE, tag: `export${SIZE}`, key: t.api_key, org: t.organization_id, user: t.user_id };
  const seeding = await seedSearchData(databaseUrl, [tenant], (m) => log(m.replace(/^search:/, "exports:")));
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {} });
  try {
    await sql`update tasks.tasks set parent_number = number - 1 where organization_id = ${tenant.org} and number % 10 = 0`;
    await sql`analyze tasks.tasks`;
  } finally {
    await sql.end({ timeout: 1 });
  }
  log(`exports: reading the ${SIZE.toLocaleString("en-US")} tasks and their versions by cursors (the baseline) …`);
  const baseline = await cursorBaseline(databaseUrl, tenant.org);
  const runs = [];
  for (const format of ["jsonl", "csv"]) {
    log(`exports: exporting ${SIZE.toLocaleString("en-US")} tasks as ${format} …`);
    runs.push(await oneExport({ gateway, key: tenant.key, tasksPid, databaseUrl, format, cpu, log }));
  }
  return { size: SIZE, seeding, baseline, runs };
}

export function printExports(r) {
  const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  console.log(`\nExports · ${fmt(r.size)} tasks (one in ten a subtask), one export at a time through the API · the tasks process's RSS sampled every 100 ms`);
  console.log(
    `baseline: cursors over the same tasks and versions, each row made a JSON line and dropped: ${fmt(r.baseline.rows_per_second)} rows/s (${fmt(r.baseline.seconds, 1)} s for ${fmt(r.baseline.rows)} rows, ${fmt(r.baseline.bytes / 1048576, 1)} MiB)`,
  );
  const head = ["format", "tasks/s", "seconds", "file MiB", "RSS before", "RSS peak", "growth MiB", "VmHWM"];
  const rows = r.runs.map((x) => [
    x.format,
    fmt(x.tasks_per_second),
    fmt(x.seconds, 1),
    fmt(x.bytes / 1048576, 1),
    fmt(x.rss_before_mib, 1),
    fmt(x.rss_peak_mib, 1),
    fmt(x.rss_growth_mib, 1),
    fmt(x.hwm_mib, 1),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  ");
  console.log(line(head));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const row of rows) console.log(line(row));
  for (const x of r.runs)
    console.log(
      `${x.format}: CPU ms per 1,000 tasks: ${Object.entries(x.cpu_ms_per_1000_tasks)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}`,
    );
}
