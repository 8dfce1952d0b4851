#!/usr/bin/env node
// Runs the whole stack on local Postgres and NATS, one process per service (as in production),
// with prefixed output. Ctrl-C stops everything; if one process dies, the others are stopped too.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
// The registry (libs/contracts/src/services.ts), built: `npm start` and `make run` build first.
import { SERVICE_NODE_FLAGS, SERVICES } from "@tasksvc/contracts";

const root = fileURLToPath(new URL("..", import.meta.url));
// Registry order matters only for readability of the first lines; each service waits for nothing.
const services = SERVICES.map((s) => s.name);
const children = new Map();
let stopping = false;
let exitCode = 0;

function stopAll(code) {
  if (stopping) return;
  stopping = true;
  exitCode = code;
  for (const child of children.values()) child.kill("SIGTERM");
  const force = setTimeout(() => {
    for (const child of children.values()) child.kill("SIGKILL");
    process.exit(1);
  }, 10_000);
  force.unref();
  const wait = setInterval(() => {
    if (children.size === 0) {
      clearInterval(wait);
      process.exit(exitCode);
    }
  }, 50);
}

function pipe(name, stream, out) {
  let buf = "";
  stream.on("data", (chunk) => {
    buf += chunk;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      out.write(`${name.padEnd(8)}| ${buf.slice(0, i)}\n`);
      buf = buf.slice(i + 1);
    }
  });
}

// At a terminal, readable logs (LOG_FORMAT=pretty, docs/operations.md "Logs") unless LOG_FORMAT says
// otherwise; FORCE_COLOR because the children write into a pipe, not the terminal. Piped or
// redirected (CI, a file), JSON lines as in production.
const env = { ...process.env };
if (!env.LOG_FORMAT && process.stdout.isTTY) {
  env.LOG_FORMAT = "pretty";
  if (env.FORCE_COLOR === undefined && env.NO_COLOR === undefined) env.FORCE_COLOR = "1";
}
// Stack traces point at the TypeScript sources (tsc emits source maps next to dist/); the rest are
// the flags every service runs with in production.
const nodeArgs = ["--enable-source-maps", ...SERVICE_NODE_FLAGS];

for (const name of services) {
  const child = spawn(process.execPath, [...nodeArgs, `services/${name}/dist/main.js`], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  children.set(name, child);
  pipe(name, child.stdout, process.stdout);
  pipe(name, child.stderr, process.stderr);
  child.on("exit", (code, signal) => {
    children.delete(name);
    if (stopping) {
      // Each service exits 0 once drained; anything else (a failed stop) fails the whole run.
      if (code !== 0) exitCode = 1;
      process.stderr.write(`${name.padEnd(8)}| stopped (${signal ?? `exit ${code}`})\n`);
    } else {
      process.stderr.write(`${name.padEnd(8)}| exited (${signal ?? code}); stopping the stack\n`);
      stopAll(code || 1);
    }
  });
}
process.on("SIGINT", () => stopAll(0));
process.on("SIGTERM", () => stopAll(0));
