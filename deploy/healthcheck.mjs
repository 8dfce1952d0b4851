// The image's HEALTHCHECK, generic over the processes one image runs (deploy/Dockerfile).
//   node deploy/healthcheck.mjs            GET /healthz (liveness) of the process in this container
//   node deploy/healthcheck.mjs /readyz    GET /readyz (docker-compose.yml: healthy = ready to serve)
//   node deploy/healthcheck.mjs http://127.0.0.1:9101/readyz   an explicit URL
// The port: the gateway's PORT (default 8080), where its /healthz and /readyz answer as well as on
// its ops port (its /readyz is what the load balancer in front of it sees); a service's OPS_PORT, else its default
// ops port from the registry (libs/contracts SERVICES). Which process runs is read from the
// command lines in /proc (services/<name>/dist/main.js). Exit 0 when the answer is 2xx, else 1.
import { readFileSync, readdirSync } from "node:fs";

const TIMEOUT_MS = 2500;

function fail(message) {
  console.error(`healthcheck: ${message}`);
  process.exit(1);
}

/** The service whose entry point a process in this container runs, or undefined. */
function runningService() {
  let pids = [];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    const m = /services\/([a-z0-9-]+)\/dist\/main\.js/.exec(cmd);
    if (m) return m[1];
  }
  return undefined;
}

async function defaultPort(name) {
  if (name === "gateway") return process.env.PORT || "8080";
  if (process.env.OPS_PORT) return process.env.OPS_PORT;
  if (name === undefined) fail("no services/<name>/dist/main.js process found; set OPS_PORT or pass a URL");
  const { SERVICES } = await import("@tasksvc/contracts");
  const entry = SERVICES.find((s) => s.name === name);
  if (entry?.opsPort === undefined) fail(`service ${name} has no default ops port; set OPS_PORT or pass a URL`);
  return String(entry.opsPort);
}

const arg = process.argv[2] ?? "/healthz";
const url = /^https?:\/\//.test(arg) ? arg : `http://127.0.0.1:${await defaultPort(runningService())}${arg.startsWith("/") ? arg : `/${arg}`}`;

try {
  const res = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!res.ok) fail(`${url} answered ${res.status}`);
} catch (err) {
  fail(`${url}: ${err instanceof Error ? err.message : String(err)}`);
}
