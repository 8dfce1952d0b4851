// The bench's yardsticks beside req/s: CPU time per request of every process involved (from
// /proc, user + system) and latency at a steady offered rate (steady-load.mjs, its own process).
import { spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Linux's clock ticks per second for /proc/<pid>/stat times (USER_HZ, 100 on every Linux ABI). */
const TICKS = 100;

function procStat(pid) {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name is in parentheses and may hold spaces: fields count from after it.
    const close = text.lastIndexOf(")");
    const name = text.slice(text.indexOf("(") + 1, close);
    const f = text.slice(close + 2).split(" ");
    // utime + stime, plus cutime + cstime: the time of children it has reaped, so a Postgres
    // backend that exits between two snapshots stays counted (in the postmaster's figure).
    return { name, ms: ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / TICKS };
  } catch {
    return undefined; // ended meanwhile
  }
}

/** Write system calls so far (write, writev, sendto, sendmsg…: each socket write is one), from /proc/<pid>/io. */
function procWrites(pid) {
  try {
    const m = /^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // ended meanwhile
  }
}

/** Who each Postgres process works for, by pid, as last read from pg_stat_activity. */
let postgresWho = new Map();

/** A backend is named by the pool that opened it (its application_name); others by their kind. */
function whoOf({ application_name: app, backend_type: type }) {
  if (type !== "client backend") return type;
  if (!app?.startsWith("tasksvc-")) return "the bench itself";
  const rest = app.slice("tasksvc-".length);
  return rest.includes("matched") ? "matched responder" : rest.split("-")[0];
}

/**
 * Names the Postgres processes before a snapshot, so Postgres's CPU splits by who asked for it (a
 * service's pools, the matched responder, the bench's own statements, the server's background
 * processes). A backend that ended in between (a pool's connection idle for 30 s) is counted in
 * the postmaster's figure, its whole life.
 */
export async function namePostgresBackends(sql) {
  const rows = await sql`select pid, application_name, backend_type from pg_stat_activity`;
  postgresWho = new Map(rows.map((r) => [String(r.pid), whoOf(r)]));
}

/** The rows that split "postgres": left out of the total, which counts "postgres" already. */
export const POSTGRES_PART = "postgres · ";

/**
 * A figure so far of each named process (a pid, or a list of them), plus "postgres" (every
 * Postgres process: backends, writers, WAL), split by who each works for, and "nats-server"
 * (every nats-server on the machine).
 */
function snapshot(named, read) {
  const out = {};
  for (const [name, pids] of Object.entries(named)) {
    out[name] = [pids].flat().reduce((a, pid) => a + read(pid), 0);
  }
  out.postgres = 0;
  out["nats-server"] = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const name = procStat(entry)?.name;
    if (name !== "postgres" && name !== "nats-server") continue;
    const v = read(entry);
    out[name] += v;
    if (name === "postgres") {
      // The postmaster's figure holds the whole life of every backend that ended (its children's times).
      const part = `${POSTGRES_PART}${postgresWho.get(entry) ?? "ended backends, postmaster"}`;
      out[part] = (out[part] ?? 0) + v;
    }
  }
  return out;
}

/** CPU milliseconds so far of each named process, and of Postgres and NATS. */
export const cpuSnapshot = (named) => snapshot(named, (pid) => procStat(pid)?.ms ?? 0);

/**
 * Write system calls so far, the same way. On these machines a socket write costs tens of
 * microseconds (the loopback delivers it to the reader inside the call), so how many a request
 * makes explains much of its CPU beside its matched baseline's.
 */
export const writesSnapshot = (named) => snapshot(named, procWrites);

/** CPU ms (or writes) per request by process between two snapshots (processes that did nothing left out). */
export function cpuPerRequest(before, after, requests) {
  const out = {};
  let total = 0;
  for (const name of new Set([...Object.keys(after), ...Object.keys(before)])) {
    const ms = (after[name] ?? 0) - (before[name] ?? 0);
    // A part of Postgres may be negative: a backend that ended in between took its time before the
    // first snapshot away from its owner's part, and its whole life is in the postmaster's part.
    // The parts add up to "postgres", which is exact.
    if (name.startsWith(POSTGRES_PART)) {
      if (ms !== 0) out[name] = Number((ms / requests).toFixed(3));
      continue;
    }
    if (ms <= 0) continue;
    out[name] = Number((ms / requests).toFixed(3));
    total += ms;
  }
  out.total = Number((total / requests).toFixed(3));
  return out;
}

/** Runs the open-loop generator: `rate` req/s for `seconds` after `warmup` seconds; resolves its figures and its own pid. */
export function steadyLoad(url, request, rate, seconds, warmup) {
  return new Promise((resolve, reject) => {
    const script = fileURLToPath(new URL("./steady-load.mjs", import.meta.url));
    const child = spawn(process.execPath, [script, JSON.stringify({ url, rate, seconds, warmup, request })], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(JSON.parse(out.trim().split("\n").at(-1))) : reject(new Error(`steady load exited with ${code}`))));
  });
}
