// Open-loop load at a steady rate: request i is due at start + i/rate whatever the answers before
// it did, and its latency counts from when it was due, so a stall shows in the figures instead of
// slowing the sender (no coordinated omission). Run as a process of its own; prints one JSON line.
// Argument: {"url","rate","seconds","warmup","request":{method,path,paths,headers,body,freshIdempotencyKey}};
// `paths`, when given, are taken in turn.
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import http from "node:http";

const { url, rate, seconds, warmup, request } = JSON.parse(process.argv[2]);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const latencies = [];
const dues = [];
let sent = 0;
let completed = 0;
let non2xx = 0;
let errors = 0;
let inFlight = 0;

function send(dueAt, measured) {
  const headers = { ...(request.headers ?? {}) };
  if (request.freshIdempotencyKey) headers["idempotency-key"] = randomUUID();
  if (request.body !== undefined) headers["content-length"] = Buffer.byteLength(request.body);
  inFlight++;
  const path = request.paths ? request.paths[sent % request.paths.length] : request.path;
  const req = http.request({ host: target.hostname, port: target.port, method: request.method, path, headers, agent }, (res) => {
    res.resume();
    res.on("end", () => {
      inFlight--;
      if (!measured) return;
      completed++;
      if (res.statusCode < 200 || res.statusCode >= 300) non2xx++;
      latencies.push(performance.now() - dueAt);
      dues.push(dueAt - start);
    });
  });
  req.on("error", () => {
    inFlight--;
    if (measured) errors++;
  });
  req.end(request.body);
}

const total = Math.round(rate * (warmup + seconds));
const warm = Math.round(rate * warmup);
const start = performance.now() + 50;
// The generator's own stalls (a collection, a core taken by another process): the requests due
// meanwhile go out late, and their latency counts from when they were due, so a stall here reads
// as a stall of the stack. Ticks come every 1-2 ms; a gap over 10 ms is counted.
const STALL_MS = 10;
const stalls = [];
let lastTick;
await new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    if (lastTick !== undefined && now - lastTick > STALL_MS && now - start > warmup * 1000) stalls.push({ at: lastTick - start, ms: now - lastTick });
    lastTick = now;
    const due = Math.min(total, Math.floor(((now - start) * rate) / 1000) + 1);
    while (sent < due) {
      send(start + (sent * 1000) / rate, sent >= warm);
      sent++;
    }
    if (sent < total) setTimeout(tick, 1);
    else resolve();
  };
  setTimeout(tick, 50);
});
const deadline = performance.now() + 30_000;
while (inFlight > 0 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
// BENCH_STEADY_TRACE=<file>: each request's due time and latency, to see where a tail comes from.
// One file per run (the name gains the run's start, in ms since the epoch, as the times' origin).
if (process.env.BENCH_STEADY_TRACE) {
  const origin = Math.round(performance.timeOrigin + start);
  writeFileSync(`${process.env.BENCH_STEADY_TRACE}.${origin}`, dues.map((d, i) => `${d.toFixed(1)} ${latencies[i].toFixed(2)}`).join("\n"));
  writeFileSync(`${process.env.BENCH_STEADY_TRACE}.${origin}.stalls`, stalls.map((x) => `${x.at.toFixed(1)} ${x.ms.toFixed(2)}`).join("\n"));
}
latencies.sort((a, b) => a - b);
const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
console.log(
  JSON.stringify({
    rate,
    seconds,
    offered: total - warm,
    completed,
    non2xx,
    errors,
    lost: inFlight,
    p50: q(0.5),
    p99: q(0.99),
    max: latencies.at(-1) ?? NaN,
    generator_stalls: stalls.length,
    generator_stall_max: Math.max(0, ...stalls.map((x) => x.ms)),
  }),
);
agent.destroy();
