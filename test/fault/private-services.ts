import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@tasksvc/testing";

/**
 * A Postgres and a nats-server of the test's own, which it may crash and restart. The shared
 * servers (127.0.0.1:5432 and :4222) are never touched: everything here runs on a port the kernel
 * picked and in a fresh directory under the OS temp dir.
 *
 * Stray servers: Postgres started by pg_ctl is a daemon, not our child, and a nats-server child
 * outlives a test process killed with SIGKILL. So `stop()` runs from afterAll, an exit hook stops
 * whatever is still up, a detached watchdog shell stops the servers once the test process is gone
 * (a worker killed outright runs no hook), and every start first sweeps directories whose owner
 * (recorded in the directory) is dead.
 */

const PG_PREFIX = "tasksvc-fault-pg-";
const NATS_PREFIX = "tasksvc-fault-nats-";
const OWNER_FILE = "owner.pid";
const NATS_PID_FILE = "nats.pid";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readPid(file: string): number | null {
  try {
    const n = Number(readFileSync(file, "utf8").split("\n")[0]?.trim());
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

function pgBinDir(): string {
  try {
    return execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
  } catch {
    return "/usr/lib/postgresql/15/bin";
  }
}

/** initdb refuses to run as root; the data directory must belong to the user that runs Postgres. */
export const asPostgres = process.getuid?.() === 0;
export function pgUserIds(): { uid: number; gid: number } {
  const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
  const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
  return { uid, gid };
}

function runPg(bin: string, args: string[], timeoutMs = 60_000): string {
  const [cmd, argv] = asPostgres ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  try {
    return execFileSync(cmd, argv, { encoding: "utf8", timeout: timeoutMs, stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${bin} ${args.join(" ")} failed: ${err.message}\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}

/** Stops servers left behind by test processes that no longer exist (a run killed outright). */
function sweepStrays(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of entries) {
    if (!name.startsWith(PG_PREFIX) && !name.startsWith(NATS_PREFIX)) continue;
    const dir = join(tmpdir(), name);
    const owner = readPid(join(dir, OWNER_FILE));
    if (owner !== null && alive(owner)) continue;
    if (name.startsWith(PG_PREFIX)) {
      const data = join(dir, "data");
      if (existsSync(join(data, "postmaster.pid"))) {
        try {
          runPg(join(pgBinDir(), "pg_ctl"), ["stop", "-D", data, "-m", "immediate", "-w", "-t", "20"], 30_000);
        } catch {
          // already gone
        }
      }
    } else {
      // One nats.pid for a single server, nats-<i>.pid for each server of a cluster.
      let files: string[] = [];
      try {
        files = readdirSync(dir).filter((f) => f === NATS_PID_FILE || /^nats-\d+\.pid$/.test(f));
      } catch {
        // gone meanwhile
      }
      for (const f of files) {
        const pid = readPid(join(dir, f));
        if (pid !== null && alive(pid)) {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Cleanups still to run if the process exits without afterAll (synchronous: 'exit' allows no more). */
const exitHooks = new Set<() => void>();
let exitHookInstalled = false;
export function onExit(fn: () => void): () => void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const f of exitHooks) {
        try {
          f();
        } catch {
          // best effort at exit
        }
      }
    });
  }
  exitHooks.add(fn);
  return () => exitHooks.delete(fn);
}

/**
 * A detached shell that outlives the test process: when the owner pid is gone (a worker killed
 * with SIGKILL or SIGTERM runs no exit hook), it runs `cleanup` and ends. stop() kills it first.
 */
export function watchdog(cleanup: string): ChildProcess {
  const w = spawn("sh", ["-c", `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${cleanup}`], { detached: true, stdio: "ignore" });
  w.unref();
  return w;
}

function portRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (lo && hi) return [lo, hi];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

/**
 * A free port BELOW the ephemeral range. While a server is down, clients keep connecting to its
 * port; an outgoing connection can be given that very port as its source and connect to itself
 * (TCP self-connect), and then the server cannot bind it when it starts again. Ports the kernel
 * never hands out as source ports cannot be taken that way.
 */
export async function serverPort(): Promise<number> {
  const [lo] = portRange();
  const floor = 10_000;
  const span = Math.max(1000, lo - floor);
  for (let i = 0; i < 50; i++) {
    const port = floor + Math.floor(Math.random() * span);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once("error", () => resolve(false));
      srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
  throw new Error("no free port below the ephemeral range");
}

export function tcpOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

export type PgStopMode = "immediate" | "fast" | "smart";

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:<port>/postgres: a base URL for startProcessStack's pgBase. */
  url: string;
  port: number;
  dir: string;
  /** Stops the server; "immediate" is a crash (no checkpoint; recovery replays the WAL at start). */
  down(mode?: PgStopMode): Promise<void>;
  /** Starts it again on the same port and data directory; resolves when it accepts connections (no-op while up). */
  up(): Promise<void>;
  /** down(mode) then up(). */
  restart(mode?: PgStopMode): Promise<void>;
  /** Stops it (immediate) and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
  /** The server log (for failure messages). */
  log(): string;
}

/**
 * initdb + pg_ctl in a fresh directory: trust auth on 127.0.0.1 only, the socket inside the
 * directory, fsync on (the tests are about durability), small shared_buffers.
 */
export async function startPrivatePostgres(opts: { maxConnections?: number } = {}): Promise<PrivatePostgres> {
  sweepStrays();
  const bin = pgBinDir();
  const pgCtl = join(bin, "pg_ctl");
  const dir = mkdtempSync(join(tmpdir(), PG_PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  const data = join(dir, "data");
  const sock = join(dir, "sock");
  const logFile = join(dir, "postgres.log");
  mkdirSync(sock);
  if (asPostgres) {
    const { uid, gid } = pgUserIds();
    chownSync(dir, uid, gid);
    chownSync(sock, uid, gid);
  }
  let stopped = false;
  let running = false;
  const hardStop = () => {
    if (existsSync(join(data, "postmaster.pid"))) runPg(pgCtl, ["stop", "-D", data, "-m", "immediate", "-w", "-t", "20"], 30_000);
  };
  const pgCtlShell = `${asPostgres ? "runuser -u postgres -- " : ""}'${pgCtl}' stop -D '${data}' -m immediate -w -t 20`;
  const guard = watchdog(`${pgCtlShell} >/dev/null 2>&1; rm -rf '${dir}'`);
  const unhook0 = onExit(() => {
    hardStop();
    rmSync(dir, { recursive: true, force: true });
  });
  const unhook = () => {
    unhook0();
    guard.kill("SIGKILL");
  };
  try {
    runPg(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions"], 120_000);
  } catch (e) {
    unhook();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const port = await serverPort();
  const maxConnections = opts.maxConnections ?? 200;
  // The conf lines come last in postgresql.conf, so they win over initdb's defaults.
  writeFileSync(
    join(data, "postgresql.conf"),
    [
      readFileSync(join(data, "postgresql.conf"), "utf8"),
      "# test/fault/private-services.ts",
      "listen_addresses = '127.0.0.1'",
      `port = ${port}`,
      `unix_socket_directories = '${sock}'`,
      `max_connections = ${maxConnections}`,
      "shared_buffers = 32MB",
      "fsync = on",
      "synchronous_commit = on",
      "full_page_writes = on",
      "logging_collector = off",
      "",
    ].join("\n"),
    { flag: "w" },
  );

  async function up(): Promise<void> {
    if (stopped) throw new Error("private Postgres was stopped for good");
    if (running) return;
    runPg(pgCtl, ["start", "-D", data, "-l", logFile, "-w", "-t", "60"], 90_000);
    running = true;
    await eventually(() => tcpOpen(port), { what: `private Postgres on port ${port}`, timeoutMs: 30_000, intervalMs: 50 });
  }
  async function down(mode: PgStopMode = "immediate"): Promise<void> {
    if (!running) return;
    runPg(pgCtl, ["stop", "-D", data, "-m", mode, "-w", "-t", "60"], 90_000);
    running = false;
  }

  try {
    await up();
  } catch (e) {
    const log = existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-4000) : "";
    try {
      hardStop();
    } catch {
      // nothing started
    }
    unhook();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${(e as Error).message}\n${log}`);
  }

  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    down,
    up,
    async restart(mode: PgStopMode = "immediate") {
      await down(mode);
      await up();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        hardStop();
      } finally {
        running = false;
        unhook();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    log: () => (existsSync(logFile) ? readFileSync(logFile, "utf8") : ""),
  };
}

export interface PrivateNats {
  /** nats://127.0.0.1:<port> */
  url: string;
  port: number;
  dir: string;
  /** Kills the server (SIGKILL by default: a crash; JetStream's store stays on disk). */
  down(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and store directory; resolves when it accepts clients (no-op while up). */
  up(): Promise<void>;
  /** down(signal) then up(). */
  restart(signal?: NodeJS.Signals): Promise<void>;
  /** Kills it and removes the store directory. Safe to call twice. */
  stop(): Promise<void>;
  /** What the server printed (for failure messages). */
  log(): string;
}

/** `nats-server -js -a 127.0.0.1 -p <free port> -sd <tempdir>` as a child of the test process. */
export async function startPrivateNats(): Promise<PrivateNats> {
  sweepStrays();
  const dir = mkdtempSync(join(tmpdir(), NATS_PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  const store = join(dir, "jetstream");
  const port = await serverPort();
  let child: ChildProcess | undefined;
  let output = "";
  let stopped = false;
  const guard = watchdog(`kill -9 "$(cat '${join(dir, NATS_PID_FILE)}' 2>/dev/null)" 2>/dev/null; rm -rf '${dir}'`);
  const unhook0 = onExit(() => {
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  const unhook = () => {
    unhook0();
    guard.kill("SIGKILL");
  };

  async function up(): Promise<void> {
    if (stopped) throw new Error("private NATS was stopped for good");
    if (child && child.exitCode === null && child.signalCode === null) return;
    let ready = false;
    const c = spawn("nats-server", ["-js", "-a", "127.0.0.1", "-p", String(port), "-sd", store], { stdio: ["ignore", "pipe", "pipe"] });
    child = c;
    if (c.pid !== undefined) writeFileSync(join(dir, NATS_PID_FILE), `${c.pid}\n`);
    const keep = (d: Buffer) => {
      output = (output + d.toString()).slice(-20_000);
      // Printed after JetStream has restored its streams from the store directory.
      if (output.includes("Server is ready")) ready = true;
    };
    c.stdout?.on("data", keep);
    c.stderr?.on("data", keep);
    await eventually(
      async () => {
        if (c.exitCode !== null || c.signalCode !== null) throw new Error(`nats-server exited (${c.exitCode ?? c.signalCode}):\n${output.slice(-3000)}`);
        return ready && (await tcpOpen(port));
      },
      { what: `private nats-server on port ${port}`, timeoutMs: 30_000, intervalMs: 50 },
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${output.slice(-3000)}`);
    });
  }
  async function down(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise<void>((res) => c.once("exit", () => res()));
    c.kill(signal);
    await gone;
    output += `\n--- nats-server stopped with ${signal} ---\n`;
  }

  try {
    await up();
  } catch (e) {
    await down().catch(() => undefined);
    unhook();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    down,
    up,
    async restart(signal: NodeJS.Signals = "SIGKILL") {
      await down(signal);
      await up();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await down("SIGKILL");
      } finally {
        unhook();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    log: () => output,
  };
}

export interface PrivateNatsCluster {
  /** Comma-separated client URLs of every server (usable as NATS_URL), server 0 first. */
  urls: string;
  /** Each server's client URL (nats://127.0.0.1:<port>), by index. */
  url: string[];
  /** Each server's name (`-n`), by index: what JetStream reports as a stream's leader. */
  names: string[];
  /** Each server's monitoring port (`-m`), by index. */
  monitorPorts: number[];
  dir: string;
  /** The index of the server named `name` (e.g. a stream leader), or -1. */
  indexOf(name: string): number;
  /** Whether server i is running. */
  running(i: number): boolean;
  /** Kills server i (SIGKILL by default: a crash; its store stays on disk). */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /**
   * Starts server i again on the same ports and store directory; resolves when it accepts clients
   * and sees the JetStream meta leader (no-op while up).
   */
  start(i: number): Promise<void>;
  /** kill(i, signal) then start(i). */
  restart(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** The meta leader's name as server i's /jsz reports it ("" while there is none). */
  metaLeader(i: number): Promise<string>;
  /** Kills every server and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
  /** What server i printed (for failure messages). */
  log(i: number): string;
}

interface ClusterNode {
  name: string;
  port: number;
  clusterPort: number;
  monitorPort: number;
  store: string;
  pidFile: string;
  child?: ChildProcess;
  output: string;
}

async function jsz(monitorPort: number): Promise<{ meta_cluster?: { leader?: string; cluster_size?: number } }> {
  const res = await fetch(`http://127.0.0.1:${monitorPort}/jsz`, { signal: AbortSignal.timeout(1000) });
  return (await res.json()) as { meta_cluster?: { leader?: string; cluster_size?: number } };
}

/**
 * `n` nats-servers with JetStream, clustered over routes on 127.0.0.1 (NATS 2.9: `-n`,
 * `--cluster_name`, `--cluster`, `--routes`), each with its own client, cluster and monitoring
 * port (free, below the ephemeral range) and store directory, all in one fresh directory under the
 * OS temp dir. Same stray hygiene as startPrivateNats (owner file, watchdog, exit hook, sweep).
 * Resolves once every server accepts clients and reports the same JetStream meta leader.
 */
export async function startPrivateNatsCluster(n = 3): Promise<PrivateNatsCluster> {
  if (n < 1) throw new Error("a cluster needs at least one server");
  sweepStrays();
  const dir = mkdtempSync(join(tmpdir(), NATS_PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  const clusterName = `fault_${process.pid}_${Date.now().toString(36)}`;
  const nodes: ClusterNode[] = [];
  const taken = new Set<number>();
  const port = async () => {
    for (;;) {
      const p = await serverPort();
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  for (let i = 0; i < n; i++) {
    nodes.push({
      name: `n${i}`,
      port: await port(),
      clusterPort: await port(),
      monitorPort: await port(),
      store: join(dir, `n${i}`),
      pidFile: join(dir, `nats-${i}.pid`),
      output: "",
    });
  }
  let stopped = false;
  const up = (c: ChildProcess | undefined): c is ChildProcess => c !== undefined && c.exitCode === null && c.signalCode === null;
  const guard = watchdog(`for f in '${dir}'/nats-*.pid; do kill -9 "$(cat "$f" 2>/dev/null)" 2>/dev/null; done; rm -rf '${dir}'`);
  const unhook0 = onExit(() => {
    for (const node of nodes) if (up(node.child)) node.child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  const unhook = () => {
    unhook0();
    guard.kill("SIGKILL");
  };
  const nodeAt = (i: number): ClusterNode => {
    const node = nodes[i];
    if (!node) throw new Error(`no server ${i} in a cluster of ${n}`);
    return node;
  };

  async function metaLeader(i: number): Promise<string> {
    return (await jsz(nodeAt(i).monitorPort)).meta_cluster?.leader ?? "";
  }

  function spawnNode(i: number): ChildProcess {
    const node = nodeAt(i);
    const routes = nodes.filter((_, j) => j !== i).map((o) => `nats://127.0.0.1:${o.clusterPort}`);
    const args = ["-js", "-a", "127.0.0.1", "-p", String(node.port), "-m", String(node.monitorPort), "-sd", node.store, "-n", node.name];
    if (n > 1) args.push("--cluster_name", clusterName, "--cluster", `nats://127.0.0.1:${node.clusterPort}`, "--routes", routes.join(","));
    const c = spawn("nats-server", args, { stdio: ["ignore", "pipe", "pipe"] });
    node.child = c;
    if (c.pid !== undefined) writeFileSync(node.pidFile, `${c.pid}\n`);
    const keep = (d: Buffer) => {
      node.output = (node.output + d.toString()).slice(-20_000);
    };
    c.stdout?.on("data", keep);
    c.stderr?.on("data", keep);
    return c;
  }

  /** Server i accepts clients and sees a meta leader. */
  async function waitNode(i: number, timeoutMs = 30_000): Promise<void> {
    const node = nodeAt(i);
    await eventually(
      async () => {
        const c = node.child;
        if (!c || c.exitCode !== null || c.signalCode !== null) throw new Error(`nats-server ${node.name} exited (${c?.exitCode ?? c?.signalCode})`);
        return node.output.includes("Server is ready") && (await tcpOpen(node.port)) && (await metaLeader(i)) !== "";
      },
      { what: `private nats-server ${node.name} on port ${node.port} with a JetStream meta leader`, timeoutMs, intervalMs: 100 },
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${node.output.slice(-3000)}`);
    });
  }

  async function start(i: number): Promise<void> {
    if (stopped) throw new Error("private NATS cluster was stopped for good");
    if (up(nodeAt(i).child)) return;
    spawnNode(i);
    await waitNode(i);
  }

  async function kill(i: number, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    const node = nodeAt(i);
    const c = node.child;
    if (!up(c)) return;
    const gone = new Promise<void>((res) => c.once("exit", () => res()));
    c.kill(signal);
    await gone;
    node.output += `\n--- nats-server stopped with ${signal} ---\n`;
  }

  try {
    // All at once: JetStream elects its meta leader once a quorum of the routes is up.
    for (let i = 0; i < n; i++) spawnNode(i);
    await Promise.all(nodes.map((_, i) => waitNode(i, 60_000)));
    // Every server agrees on the one leader (none still reports an election in progress).
    await eventually(async () => new Set(await Promise.all(nodes.map((_, i) => metaLeader(i)))).size === 1, {
      what: "every server to report the same JetStream meta leader",
      timeoutMs: 30_000,
      intervalMs: 100,
    });
  } catch (e) {
    await Promise.all(nodes.map((_, i) => kill(i).catch(() => undefined)));
    unhook();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }

  return {
    urls: nodes.map((node) => `nats://127.0.0.1:${node.port}`).join(","),
    url: nodes.map((node) => `nats://127.0.0.1:${node.port}`),
    names: nodes.map((node) => node.name),
    monitorPorts: nodes.map((node) => node.monitorPort),
    dir,
    indexOf: (name: string) => nodes.findIndex((node) => node.name === name),
    running: (i: number) => up(nodeAt(i).child),
    kill,
    start,
    async restart(i: number, signal: NodeJS.Signals = "SIGKILL") {
      await kill(i, signal);
      await start(i);
    },
    metaLeader,
    async stop() {
      if (stopped) return;
      stopped = true;
      try {
        await Promise.all(nodes.map((_, i) => kill(i, "SIGKILL")));
      } finally {
        unhook();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    log: (i: number) => nodeAt(i).output,
  };
}
