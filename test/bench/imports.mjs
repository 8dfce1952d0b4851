// Import scenario of the benchmark, run by run.mjs on its stack (BENCH_ONLY=imports runs it alone).
//
// The same number of tasks made two ways, in one run:
// (a) the baseline: POST /v1/tasks/batch with 100 creates a request, from CLIENTS concurrent clients;
// (b) an import of a CSV file of as many rows (title, priority, due_date, project, labels), timed from
//     POST /v1/imports to the import's status `succeeded` (the upload is timed apart).
// Both print tasks/s; the target is (b) at least twice (a). The tasks service's resident memory is
// sampled through the import: flat at any size, since the file is read a chunk at a time.
// BENCH_IMPORT_ROWS sets the size (default 100,000; a smoke run takes 2,000).
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { cpuPerRequest } from "./yardsticks.mjs";

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 100_000);
const CLIENTS = Number(process.env.BENCH_IMPORT_BATCH_CLIENTS ?? 8);
const BATCH = 100;

const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;

async function call(url, { method = "GET", key, body, headers = {} }) {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, text };
}

/** (a): batches of 100 creates until `rows` tasks exist, CLIENTS at a time. */
async function viaBatches(gateway, key, rows) {
  let sent = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (sent < rows) {
        const n = Math.min(BATCH, rows - sent);
        sent += n;
        const operations = Array.from({ length: n }, (_x, i) => ({
          method: "create",
          body: { title: `Batched task ${sent - n + i + 1}`, priority: "HIGH", due_date: "2026-12-31" },
        }));
        const r = await call(`${gateway}/v1/tasks/batch`, { method: "POST", key, body: { operations }, headers: { "idempotency-key": randomUUID() } });
        if (r.status !== 200 || r.body.results.some((x) => x.status !== 201)) throw new Error(`batch ${r.status}: ${r.text.slice(0, 500)}`);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { tasks: rows, seconds, perSecond: rows / seconds };
}

function csvOf(rows) {
  const lines = ["title,priority,due_date,project,labels"];
  for (let i = 1; i <= rows; i++) lines.push(`Imported task ${i},HIGH,2026-12-31,Project ${i % 10},bench;label ${i % 20}`);
  return `${lines.join("\n")}\n`;
}

/** (b): upload, then the import from its start to `succeeded`, the tasks service's RSS sampled every 50 ms. */
async function viaImport(gateway, key, rows, tasksPid) {
  const text = csvOf(rows);
  const size = Buffer.byteLength(text);
  const uploadStarted = performance.now();
  const ticket = await call(`${gateway}/v1/imports/uploads`, { method: "POST", key, body: { file_name: "bench.csv", content_type: "text/csv", size } });
  if (ticket.status !== 201) throw new Error(`upload start ${ticket.status}: ${ticket.text}`);
  const put = await fetch(ticket.body.upload_url, { method: "PUT", body: text, headers: { "content-type": "text/csv" } });
  if (put.status !== 200) throw new Error(`PUT ${put.status}: ${await put.text()}`);
  const uploadSeconds = (performance.now() - uploadStarted) / 1000;
  const idle = rssMiB(tasksPid);
  let peak = idle;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(tasksPid));
  }, 50);
  try {
    const started = performance.now();
    const made = await call(`${gateway}/v1/imports`, { method: "POST", key, body: { file_key: ticket.body.file_key, format: "csv" } });
    if (made.status !== 202) throw new Error(`import ${made.status}: ${made.text}`);
    for (;;) {
      const r = await call(`${gateway}/v1/imports/${made.body.id}`, { key });
      if (r.body.status === "failed") throw new Error(`import failed: ${r.text}`);
      if (r.body.status === "succeeded") {
        if (r.body.counts.created !== rows) throw new Error(`import made ${r.body.counts.created} of ${rows} tasks: ${r.text.slice(0, 500)}`);
        break;
      }
      await new Promise((res) => setTimeout(res, 100));
    }
    const seconds = (performance.now() - started) / 1000;
    return { tasks: rows, bytes: size, seconds, perSecond: rows / seconds, uploadSeconds, rssIdle: idle, rssPeak: peak };
  } finally {
    clearInterval(sampler);
  }
}

/**
 * `cpu()`: CPU ms so far by process (yardsticks' cpuSnapshot). Each way's CPU per task counts from
 * its start until its events are worked off (relay, fan-out, consumers), which both ways cause alike.
 */
export async function importScenarios({ gateway, key, tasksPid, settle, cpu, log }) {
  log(`bench: imports (a) ${ROWS} tasks through POST /v1/tasks/batch, ${CLIENTS} clients …`);
  let before = cpu();
  const batches = await viaBatches(gateway, key, ROWS);
  // The batches' events are worked off first: (b) would otherwise share the machine with their relay.
  await settle();
  batches.cpu = cpuPerRequest(before, cpu(), ROWS);
  log(`bench: imports (b) a CSV file of ${ROWS} rows …`);
  before = cpu();
  const imported = await viaImport(gateway, key, ROWS, tasksPid);
  await settle();
  imported.cpu = cpuPerRequest(before, cpu(), ROWS);
  return { rows: ROWS, clients: CLIENTS, batches, imported };
}

const cpuText = (c) =>
  Object.entries(c)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");

export function printImports({ rows, clients, batches, imported }) {
  const fmt = (n, d = 0) => n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
  console.log(`\nImports · ${fmt(rows)} tasks made two ways in this run`);
  console.log(`(a) POST /v1/tasks/batch, 100 creates a request, ${clients} clients: ${fmt(batches.perSecond)} tasks/s (${fmt(batches.seconds, 1)} s)`);
  console.log(
    `(b) CSV import of ${fmt(imported.bytes / 1024 / 1024, 1)} MiB: ${fmt(imported.perSecond)} tasks/s (${fmt(imported.seconds, 1)} s from POST /v1/imports to succeeded; upload ${fmt(imported.uploadSeconds, 1)} s) · ${(imported.perSecond / batches.perSecond).toFixed(2)}× (a) (target ≥ 2×)`,
  );
  console.log(`CPU ms per task, until its events were worked off: (a) ${cpuText(batches.cpu)}`);
  console.log(`CPU ms per task, until its events were worked off: (b) ${cpuText(imported.cpu)}`);
  console.log(
    `tasks service RSS during the import: idle ${fmt(imported.rssIdle, 1)} MiB, peak ${fmt(imported.rssPeak, 1)} MiB (+${fmt(imported.rssPeak - imported.rssIdle, 1)} MiB)`,
  );
}
