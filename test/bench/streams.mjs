// Live event stream scenario of the benchmark, run by run.mjs on its stack (one gateway process).
//
// 100 organizations, each with two keys holding 5 streams apiece: 1,000 open streams on the one
// gateway. Three phases, each `warmup` seconds then `duration` measured seconds:
// (0) baseline: tasks created at a steady offered rate (open loop, round-robin over the
//     organizations), no stream open: write latency, the gateway's CPU and RSS.
// (1) idle streams: the 1,000 streams opened (how long that took, any refusal), then the gateway's
//     RSS and CPU with them open and nothing written.
// (2) streams + writes: (0)'s writes with the 1,000 streams open. Every message's latency is its
//     arrival here minus the event's timestamp (the writing transaction's time, on this machine's
//     clock); delivered is counted against due (each created task × its organization's 10 streams).
// Targets printed beside the figures, asserted nowhere: p99 ≤ 250 ms, RSS under 200 MiB above idle.
import { randomBytes } from "node:crypto";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import http from "node:http";
import { keysRpc, systemContext } from "@tasksvc/contracts";
import { client, connectNats } from "@tasksvc/nats";
import { openLoop } from "./open-loop.mjs";

const ORGS = Number(process.env.BENCH_STREAM_ORGS ?? 100);
const RATE = Number(process.env.BENCH_STREAM_RATE ?? 200);
const KEYS_PER_ORG = 2;
const STREAMS_PER_KEY = 5;
const STREAMS_PER_ORG = KEYS_PER_ORG * STREAMS_PER_KEY;
const TARGET_P99_MS = 250;
const TARGET_RSS_MIB = 200;
// node:http with keep-alive for the writes, as the webhook scenario (fetch costs this process more CPU).
const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    return 100;
  }
})();

const quantile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssMiB = (pid) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? Number.NaN) / 1024;
/** utime + stime of a process in ms (fields 14 and 15 of /proc/<pid>/stat, after the command name). */
function cpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLK_TCK;
}
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** One JSON request with the keep-alive agent; resolves {status, body} (status 0 when it failed). */
function request(url, { method = "GET", key, body }) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers = { authorization: `Bearer ${key}` };
  if (payload !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
  return new Promise((resolve) => {
    const req = http.request(url, { method, agent, headers }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let parsed;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = text;
        }
        resolve({ status: res.statusCode, body: parsed });
      });
      res.on("error", () => resolve({ status: 0 }));
    });
    req.on("error", () => resolve({ status: 0 }));
    req.end(payload);
  });
}

/** Runs `fn` over `items` with at most `n` at a time. */
async function pool(items, n, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

/**
 * One SSE stream read with node:http (its own connection): the messages are split on the blank
 * line and only the data's JSON is looked at. Resolves once the answer's head has arrived.
 */
function openStream(url, key, onEvent, onEnd) {
  return new Promise((resolve) => {
    const req = http.request(url, { agent: false, headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } });
    req.on("error", (err) => resolve({ status: 0, error: String(err), req }));
    req.on("response", (res) => {
      if (res.statusCode !== 200) {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode, error: Buffer.concat(chunks).toString("utf8").slice(0, 200), req }));
        return;
      }
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          for (const line of block.split("\n")) if (line.startsWith("data: ")) onEvent(line.slice(6), Date.now());
        }
      });
      const ended = () => onEnd(req);
      res.on("end", ended);
      res.on("close", ended);
      resolve({ status: 200, req });
    });
    req.end();
  });
}

/** Open-loop writes (openLoop), round-robin over the organizations. */
function steadyWrites({ gateway, tenants, rate, seconds, onDone }) {
  return openLoop({
    rate,
    seconds,
    send: (n) => {
      const t = tenants[n % tenants.length];
      const t0 = performance.now();
      const startedAt = Date.now();
      return request(`${gateway}/v1/tasks`, { method: "POST", key: t.apiKey, body: { title: "Stream benchmark task" } }).then((r) =>
        onDone({ status: r.status, id: r.body?.id, org: t, startedAt, ms: performance.now() - t0 }),
      );
    },
  });
}

/**
 * One write phase: warm-up flowing straight into the measured window. Writes, gateway CPU and own
 * CPU are those of the window; `sample` is called every 250 ms over the whole phase.
 */
async function writePhase({ gateway, gatewayPid, tenants, duration, warmup, rate, onCreated }) {
  const writes = [];
  let from = Number.POSITIVE_INFINITY;
  let to = Number.POSITIVE_INFINITY;
  let peak = rssMiB(gatewayPid);
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB(gatewayPid));
  }, 250);
  let created = 0;
  let failed = 0;
  const load = steadyWrites({
    gateway,
    tenants,
    rate,
    seconds: warmup + duration,
    onDone: (w) => {
      if (w.status === 201) {
        created += 1;
        onCreated?.(w);
      } else failed += 1;
      if (w.startedAt >= from && w.startedAt < to) writes.push(w);
    },
  });
  await sleep(warmup * 1000);
  from = Date.now();
  const cpu0 = cpuMs(gatewayPid);
  const own0 = ownCpuMs();
  await sleep(duration * 1000);
  to = Date.now();
  const cpu1 = cpuMs(gatewayPid);
  const own1 = ownCpuMs();
  await load;
  clearInterval(sampler);
  const windowMs = to - from;
  const ok = writes.filter((w) => w.status === 201);
  const latencies = ok.map((w) => w.ms).sort((a, b) => a - b);
  return {
    from,
    to,
    offered: rate,
    achieved: ok.length / (windowMs / 1000),
    writeP50: quantile(latencies, 50),
    writeP99: quantile(latencies, 99),
    created,
    failed,
    cpuMsPerWrite: (cpu1 - cpu0) / Math.max(1, ok.length),
    cpuPercent: ((cpu1 - cpu0) / windowMs) * 100,
    ownCpuPercent: ((own1 - own0) / windowMs) * 100,
    rss: rssMiB(gatewayPid),
    rssPeak: peak,
  };
}

/** The gateway's open streams, from its ops metrics (NaN when unreadable). */
async function openOnGateway(gatewayOps) {
  try {
    const text = await (await fetch(`${gatewayOps}/metrics`)).text();
    let n = Number.NaN;
    for (const line of text.split("\n")) {
      if (line.startsWith("tasksvc_event_streams_open")) n = (Number.isNaN(n) ? 0 : n) + Number(line.slice(line.lastIndexOf(" ") + 1));
    }
    return n;
  } catch {
    return Number.NaN;
  }
}

export async function streamScenarios({ gateway, gatewayOps, gatewayPid, natsUrl, namespace, duration, warmup: httpWarmup, log }) {
  // JIT and caches settle over seconds (the first phase runs on a fresh stack), as in the webhook scenario.
  const warmup = Math.max(httpWarmup, 5);
  const url = new URL("/v1/events/stream", gateway).toString();

  log(`bench: streams: ${ORGS} organizations over NATS, a 2nd key each …`);
  const t0 = Date.now();
  const nc = await connectNats({ url: natsUrl, name: "bench-streams" });
  const tenants = [];
  try {
    const keys = client(nc, keysRpc, { namespace, timeoutMs: 10_000 });
    const made = await pool(
      Array.from({ length: ORGS }, (_, i) => i),
      10,
      async (i) => {
        const tag = randomBytes(3).toString("hex");
        const r = await keys.call(
          "bootstrap",
          { org: `Stream bench ${i} ${tag}`, plan: "team", email: `stream-${i}-${tag}@example.test` },
          systemContext("bench"),
        );
        // The benchmark measures streams, not the limiter's refusals.
        await keys.call("setLimits", { org: r.organization_id, burst: 1_000_000_000, quota: 2_000_000_000 }, systemContext("bench"));
        return r;
      },
    );
    for (const r of made) tenants.push({ org: r.organization_id, apiKey: r.api_key, keys: [r.api_key] });
  } finally {
    await nc.drain();
  }
  await pool(tenants, 10, async (t) => {
    const r = await request(`${gateway}/v1/api-keys`, { method: "POST", key: t.apiKey, body: { name: "stream bench", scopes: ["tasks:read"] } });
    if (r.status !== 201) throw new Error(`api key create failed: ${r.status} ${JSON.stringify(r.body)}`);
    t.keys.push(r.body.key);
  });
  log(`bench: streams: tenants ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // ---------- (0) baseline ----------
  log(`bench: streams (0) ${RATE} writes/s, no stream open …`);
  const baseline = await writePhase({ gateway, gatewayPid, tenants, duration, warmup, rate: RATE });
  await sleep(2000);
  const rssBefore = rssMiB(gatewayPid);

  // ---------- (1) idle streams ----------
  log(`bench: streams (1) opening ${ORGS * STREAMS_PER_ORG} streams …`);
  // Deliveries per created task (task ids are per organization: keyed by both), and each message's [arrival, latency] (live-only streams: every
  // message is of an event written after its stream opened).
  const deliveries = new Map();
  const arrivals = [];
  let unparsed = 0;
  let unexpectedEnds = 0;
  let closing = false;
  const onEvent = (org, data, at) => {
    let e;
    try {
      e = JSON.parse(data);
    } catch {
      unparsed += 1;
      return;
    }
    arrivals.push([at, at - Date.parse(e.timestamp)]);
    const id = e.data?.id;
    if (e.type === "task.created" && id) deliveries.set(`${org} ${id}`, (deliveries.get(`${org} ${id}`) ?? 0) + 1);
  };
  const ended = new Set();
  const onEnd = (req) => {
    if (ended.has(req)) return;
    ended.add(req);
    if (!closing) unexpectedEnds += 1;
  };
  const plan = tenants.flatMap((t) => t.keys.flatMap((key) => Array.from({ length: STREAMS_PER_KEY }, () => ({ key, org: t.org }))));
  const cpuOpen0 = cpuMs(gatewayPid);
  const o0 = performance.now();
  const opened = await pool(plan, 50, ({ key, org }) => openStream(url, key, (data, at) => onEvent(org, data, at), onEnd));
  const openSeconds = (performance.now() - o0) / 1000;
  const openCpuMs = cpuMs(gatewayPid) - cpuOpen0;
  const refused = opened.filter((s) => s.status !== 200);
  const refusals = {};
  for (const s of refused) refusals[s.status] = (refusals[s.status] ?? 0) + 1;
  if (refused.length > 0) log(`bench: streams: ${refused.length} refused, e.g. ${refused[0].status} ${refused[0].error}`);
  await sleep(3000);
  const idleCpu0 = cpuMs(gatewayPid);
  const i0 = Date.now();
  await sleep(duration * 1000);
  const idle = {
    streams: opened.length - refused.length,
    openSeconds,
    openCpuMs,
    refusals,
    cpuPercent: ((cpuMs(gatewayPid) - idleCpu0) / (Date.now() - i0)) * 100,
    rss: rssMiB(gatewayPid),
    gaugeOpen: await openOnGateway(gatewayOps),
  };

  // ---------- (2) streams + writes ----------
  log(`bench: streams (2) ${RATE} writes/s with ${idle.streams} streams open …`);
  const created = new Set();
  const busy = await writePhase({ gateway, gatewayPid, tenants, duration, warmup, rate: RATE, onCreated: (w) => w.id && created.add(`${w.org.org} ${w.id}`) });
  // The tail: until every due message has arrived, or 10 s.
  const due = created.size * STREAMS_PER_ORG;
  const delivered = () => {
    let n = 0;
    for (const id of created) n += Math.min(STREAMS_PER_ORG, deliveries.get(id) ?? 0);
    return n;
  };
  const drainUntil = Date.now() + 10_000;
  while (delivered() < due && Date.now() < drainUntil) await sleep(100);
  let duplicates = 0;
  for (const id of created) duplicates += Math.max(0, (deliveries.get(id) ?? 0) - STREAMS_PER_ORG);
  // Latencies of the events written inside the measured window (arrival − latency = the timestamp).
  const inWindow = arrivals
    .filter(([at, latency]) => at - latency >= busy.from && at - latency < busy.to)
    .map(([, latency]) => latency)
    .sort((a, b) => a - b);
  const streaming = {
    ...busy,
    delivered: delivered(),
    due,
    duplicates,
    messages: arrivals.length,
    unparsed,
    unexpectedEnds,
    p50: quantile(inWindow, 50),
    p99: quantile(inWindow, 99),
    max: inWindow.at(-1) ?? Number.NaN,
    windowMessages: inWindow.length,
    rssAboveIdle: busy.rssPeak - rssBefore,
  };

  // ---------- close ----------
  closing = true;
  for (const s of opened) s.req.destroy();
  const closeUntil = Date.now() + 30_000;
  let left = await openOnGateway(gatewayOps);
  while (left !== 0 && Date.now() < closeUntil) {
    await sleep(200);
    left = await openOnGateway(gatewayOps);
  }
  if (left !== 0) log(`bench: streams: the gateway still reports ${left} open streams 30 s after they were closed`);
  return { orgs: ORGS, rate: RATE, streamsPerOrg: STREAMS_PER_ORG, rssBefore, baseline, idle, streaming, leftOpen: left, clkTck: CLK_TCK };
}

/** The scenario's table, and a line with the targets. */
export function printStreams(r) {
  const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "–");
  const { baseline: b, idle: i, streaming: s } = r;
  console.log(
    `\nLive event streams · ${fmt(r.orgs)} organizations × ${r.streamsPerOrg} streams = ${fmt(r.orgs * r.streamsPerOrg)} on one gateway · ${r.rate} task creates/s offered (open loop, round-robin) · commit→client = arrival − the event's timestamp`,
  );
  const header = [
    "phase",
    "writes/s off/ach",
    "write p50/p99 ms",
    "commit→client p50/p99/max ms",
    "delivered/due",
    "gw CPU ms/write",
    "gw CPU %",
    "gw RSS MiB",
  ];
  const rows = [
    [
      "(0) writes, no stream",
      `${fmt(b.offered)}/${fmt(b.achieved)}`,
      `${fmt(b.writeP50, 1)}/${fmt(b.writeP99, 1)}`,
      "–",
      "–",
      fmt(b.cpuMsPerWrite, 2),
      fmt(b.cpuPercent, 1),
      `${fmt(b.rss, 1)} (peak ${fmt(b.rssPeak, 1)})`,
    ],
    [`(1) ${fmt(i.streams)} idle streams`, "0", "–", "–", "–", "–", fmt(i.cpuPercent, 1), `${fmt(i.rss, 1)} (+${fmt(i.rss - r.rssBefore, 1)})`],
    [
      `(2) ${fmt(i.streams)} streams + writes`,
      `${fmt(s.offered)}/${fmt(s.achieved)}`,
      `${fmt(s.writeP50, 1)}/${fmt(s.writeP99, 1)}`,
      `${fmt(s.p50, 1)}/${fmt(s.p99, 1)}/${fmt(s.max, 1)}`,
      `${fmt(s.delivered)}/${fmt(s.due)}`,
      fmt(s.cpuMsPerWrite, 2),
      fmt(s.cpuPercent, 1),
      `peak ${fmt(s.rssPeak, 1)} (+${fmt(s.rssAboveIdle, 1)})`,
    ],
  ];
  const widths = header.map((h, k) => Math.max(h.length, ...rows.map((row) => row[k].length)));
  const line = (cells) => cells.map((c, k) => (k === 0 ? c.padEnd(widths[k]) : c.padStart(widths[k]))).join("  ");
  console.log(line(header));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line(row));
  const refusals = Object.entries(i.refusals).map(([st, n]) => `${n}×${st}`);
  console.log(
    `opening ${fmt(i.streams)} streams took ${fmt(i.openSeconds, 2)} s (gateway CPU ${fmt(i.openCpuMs)} ms), refused: ${refusals.length ? refusals.join(", ") : "none"}; gateway RSS before any stream ${fmt(r.rssBefore, 1)} MiB`,
  );
  console.log(
    `(2): ${fmt(s.windowMessages)} messages in the window, ${fmt(s.duplicates)} duplicates, ${fmt(s.unexpectedEnds)} streams ended by the server, ${fmt(s.failed)} failed creates; bench process CPU ${fmt(s.ownCpuPercent, 1)} % of one core ((0): ${fmt(b.ownCpuPercent, 1)} %)`,
  );
  const p99Met = s.p99 <= TARGET_P99_MS;
  const rssMet = s.rssAboveIdle < TARGET_RSS_MIB;
  console.log(
    `targets: commit→client p99 ≤ ${TARGET_P99_MS} ms: ${fmt(s.p99, 1)} ms, ${p99Met ? "met" : "NOT met"}; RSS under ${TARGET_RSS_MIB} MiB above idle: +${fmt(s.rssAboveIdle, 1)} MiB, ${rssMet ? "met" : "NOT met"}; delivered ${s.delivered === s.due ? "all" : `${fmt(s.delivered)} of ${fmt(s.due)}`} due`,
  );
}
