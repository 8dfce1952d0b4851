import { execFile, execFileSync, spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect as netConnect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { asPostgres, onExit, pgUserIds, serverPort, tcpOpen, watchdog } from "./private-services.js";

/**
 * A Postgres failover pair of the test's own, run by pg_auto_failover 2.0 (Debian's
 * postgresql-15-auto-failover, whose CLI is pg_autoctl): a monitor, a primary and a synchronous
 * standby, each on 127.0.0.1 on a private port, in a fresh directory under the OS temp dir, with
 * trust auth (as the local tests use). In front of them, an endpoint in the test process that
 * follows the primary, as HAProxy in front of Patroni does: a TCP proxy forwarding to whichever
 * node the monitor's `pgautofailover.node` table says is the writable primary, and ending the
 * sessions to a node once it no longer is. The shared servers are never touched.
 *
 * The monitor's timings are tuned (MONITOR_SETTINGS, KEEPER_SETTINGS) so that a primary killed
 * outright is replaced within seconds rather than the defaults' 50 s or so; docs/operations.md
 * ("Failover of Postgres") gives the same values.
 *
 * Clean-up, whatever happens to the test: `stop()` from afterAll, an exit hook, and a detached
 * watchdog that stops everything once the test process is gone; every start first sweeps the
 * directories of test processes that no longer exist.
 */

const PREFIX = "tasksvc-fault-pgaf-";
const OWNER_FILE = "owner.pid";
const INSTALL =
  "apt-get install -y postgresql-15-auto-failover (Debian's package, which brings pg_autoctl; `make tools` installs it), or name another pg_autoctl with PG_AUTOCTL";

/**
 * The monitor's settings (milliseconds), set with ALTER SYSTEM and a reload. A primary is failed
 * over once its health checks fail and its keeper has not reported for the unhealthy timeout;
 * the standby then waits up to the demote timeout for the old primary to demote itself. The
 * defaults (5 s checks, 20 s unhealthy, 30 s demote) make a failover take about a minute.
 */
export const MONITOR_SETTINGS: Readonly<Record<string, number>> = {
  "pgautofailover.health_check_period": 1000,
  "pgautofailover.health_check_timeout": 1000,
  "pgautofailover.health_check_max_retries": 1,
  "pgautofailover.health_check_retry_delay": 500,
  "pgautofailover.node_considered_unhealthy_timeout": 2000,
  "pgautofailover.primary_demote_timeout": 2000,
  "pgautofailover.startup_grace_period": 1000,
};

/**
 * Each keeper's settings (seconds), set with `pg_autoctl config set`. A primary that reaches
 * neither the monitor nor its standby demotes itself after network_partition_timeout: kept within
 * the monitor's unhealthy + demote timeouts, so an isolated old primary stops before the standby
 * takes over. prepare_promotion_walreceiver is how long a standby being promoted waits for its WAL
 * receiver (default 5 s).
 */
export const KEEPER_SETTINGS: Readonly<Record<string, number>> = {
  "timeout.network_partition_timeout": 3,
  "timeout.prepare_promotion_walreceiver": 1,
};

/** The states in which pg_auto_failover lets a node take writes (its get_primary() uses the same). */
const WRITABLE = new Set(["single", "wait_primary", "primary", "join_primary", "apply_settings"]);

export interface FailoverNode {
  name: string;
  port: number;
  pgdata: string;
}

/** A row of the monitor's `pgautofailover.node` table. */
export interface NodeState {
  name: string;
  port: number;
  reported: string;
  assigned: string;
  /** The monitor's last health check: 1 good, 0 bad, -1 unknown. */
  health: number;
}

/** One change of where the endpoint forwards: a node's name, or null while no node is primary. */
export interface EndpointSwitch {
  at: number;
  to: string | null;
}

export interface PrivateFailover {
  /** postgres://postgres@127.0.0.1:<endpoint port>/postgres: the endpoint that follows the primary (startProcessStack's pgBase). */
  url: string;
  endpointPort: number;
  /** The monitor's URL (database pg_auto_failover, user autoctl_node). */
  monitorUrl: string;
  /** The two data nodes, the first primary at start. */
  nodes: readonly FailoverNode[];
  /** A URL naming one node directly. */
  nodeUrl(name: string, database?: string): string;
  /** The monitor's view of the nodes. */
  state(): Promise<NodeState[]>;
  /** The node the endpoint forwards to now (undefined while none is primary). */
  target(): FailoverNode | undefined;
  /** Every change of the endpoint's target, the first at start. */
  readonly switches: readonly EndpointSwitch[];
  /** Every change of the monitor's node table as the endpoint polled it: "node1 primary/demote_timeout, node2 …". */
  readonly history: ReadonlyArray<{ at: number; nodes: string }>;
  /**
   * kill -9 of the primary node: its keeper (`pg_autoctl run` and its subprocesses), its
   * postmaster and every backend, at once, as a machine that dies. Answers which node and when.
   */
  killPrimary(): Promise<{ node: string; at: number; processes: number }>;
  /** What one node's keeper (or the monitor's, "monitor") printed, for failure messages. */
  log(name: string): string;
  /** Stops everything and removes the directory. Safe to call twice. */
  stop(): Promise<void>;
}

function pgBinDir(): string {
  try {
    return execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim();
  } catch {
    return "/usr/lib/postgresql/15/bin";
  }
}

/** pg_autoctl: PG_AUTOCTL, else on PATH (Debian: /usr/bin), else beside pg_ctl (PGDG's RPMs). */
function findPgAutoctl(bin: string): string {
  const candidates = [process.env["PG_AUTOCTL"], "pg_autoctl", join(bin, "pg_autoctl")].filter((c): c is string => Boolean(c));
  for (const c of candidates) {
    try {
      execFileSync(c, ["--version"], { stdio: "ignore" });
      return c;
    } catch {
      // next one
    }
  }
  throw new Error(`pg_auto_failover is not installed (no pg_autoctl among ${candidates.join(", ")}): ${INSTALL}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** A live process (not a zombie) whose command line mentions `mark` (a pid read from a file may have been reused). */
function liveWith(pid: number, mark: string): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) return false;
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(mark);
  } catch {
    return false;
  }
}

/** A process and all its descendants, parents first (Linux /proc). */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const visit = (pid: number): void => {
    out.push(pid);
    for (const c of children.get(pid) ?? []) visit(c);
  };
  visit(root);
  return out;
}

/** Live processes whose working directory is `dir` or below it (Postgres' work in their data directory). */
function processesIn(dir: string): number[] {
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cwd = readlinkSync(`/proc/${entry}/cwd`);
      if ((cwd === dir || cwd.startsWith(`${dir}/`)) && liveWith(Number(entry), "")) out.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

function postmasterPid(pgdata: string): number | null {
  try {
    const n = Number(readFileSync(join(pgdata, "postmaster.pid"), "utf8").split("\n")[0]?.trim());
    return Number.isInteger(n) && n > 0 ? n : null;
  } catch {
    return null;
  }
}

/**
 * A postmaster killed with SIGKILL leaves its System V shared memory segment behind (a few bytes,
 * but one per run adds up): removed here when nothing is attached to it any more. Its id and key
 * are line 7 of postmaster.pid, checked against /proc/sysvipc/shm before the removal.
 */
function removeOrphanSegment(pgdata: string): void {
  let key: number;
  let shmid: number;
  try {
    const line = readFileSync(join(pgdata, "postmaster.pid"), "utf8").split("\n")[6] ?? "";
    [key, shmid] = line.trim().split(/\s+/).map(Number) as [number, number];
  } catch {
    return;
  }
  if (!Number.isInteger(key) || !Number.isInteger(shmid)) return;
  const row = readFileSync("/proc/sysvipc/shm", "utf8")
    .split("\n")
    .slice(1)
    .map((l) => l.trim().split(/\s+/).map(Number))
    .find((cols) => cols[1] === shmid);
  // Columns: key shmid perms size cpid lpid nattch …
  if (!row || row[0] !== key || row[6] !== 0) return;
  try {
    execFileSync("ipcrm", ["-m", String(shmid)], { stdio: "ignore" });
  } catch {
    // removed meanwhile, or not ours to remove
  }
}

/**
 * The shell that stops whatever runs from `dir` when no test process will: each keeper's tree
 * (pid files written at spawn), every process whose working directory is in `dir`, each postmaster, then, once nothing is attached to them any
 * more, the shared memory segments those postmasters can no longer remove (removeOrphanSegment),
 * then the directory. Every pid is checked to still run a command naming `dir` before it is killed.
 */
function cleanupScript(dir: string): string {
  return [
    `tree() { echo $1; for c in $(ps -o pid= --ppid $1 2>/dev/null); do tree $c; done; }`,
    `for f in '${dir}'/keeper-*.pid; do p=$(cat "$f" 2>/dev/null); [ -n "$p" ] && grep -q '${dir}' /proc/$p/cmdline 2>/dev/null && kill -9 $(tree $p) 2>/dev/null; done`,
    // A keeper whose parent died may have gone on its own, leaving subprocesses whose titles no
    // longer name the directory: every process working in it (its cwd) goes too.
    `for p in $(ls /proc | grep -E '^[0-9]+$'); do case "$(readlink /proc/$p/cwd 2>/dev/null)" in '${dir}'|'${dir}'/*) kill -9 $p 2>/dev/null;; esac; done`,
    `segs=""`,
    `for f in '${dir}'/*/postmaster.pid; do [ -f "$f" ] || continue; p=$(head -1 "$f"); segs="$segs $(sed -n 7p "$f" | tr -s ' ' | sed 's/^ //;s/ /:/')"; grep -q '${dir}' /proc/$p/cmdline 2>/dev/null && kill -9 $p 2>/dev/null; done`,
    // Columns of /proc/sysvipc/shm: key shmid perms size cpid lpid nattch. Up to 5 s for the backends to exit.
    `for s in $segs; do k=\${s%%:*}; i=\${s##*:}; for t in 1 2 3 4 5 6 7 8 9 10; do n=$(awk -v k="$k" -v i="$i" '$1==k && $2==i {print $7}' /proc/sysvipc/shm); [ "$n" = 0 ] && { ipcrm -m "$i" 2>/dev/null; break; }; [ -z "$n" ] && break; sleep 0.5; done; done`,
    `rm -rf '${dir}'`,
  ].join("; ");
}

/** Stops the clusters of test processes that no longer exist (a run killed outright). */
function sweepStrays(): void {
  let entries: string[];
  try {
    entries = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of entries) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(tmpdir(), name);
    let owner = 0;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), "utf8").trim());
    } catch {
      // no owner recorded: a start that failed at once
    }
    if (owner > 0 && alive(owner)) continue;
    try {
      execFileSync("sh", ["-c", cleanupScript(dir)], { stdio: "ignore", timeout: 30_000 });
    } catch {
      // best effort
    }
  }
}

interface Keeper {
  name: string;
  child: ChildProcess;
  output: string;
  killed: boolean;
}

/**
 * Starts the monitor, then the primary, then the synchronous standby (each `pg_autoctl create`,
 * then `pg_autoctl run` in the background), waits until the monitor reports primary + secondary,
 * and opens the endpoint. About 10 s on an idle machine.
 */
export async function startPrivateFailover(): Promise<PrivateFailover> {
  sweepStrays();
  const bin = pgBinDir();
  const pgCtl = join(bin, "pg_ctl");
  const autoctl = findPgAutoctl(bin);
  const ids = asPostgres ? pgUserIds() : undefined;
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  // pg_autoctl keeps its configuration and state under the XDG directories, and its pid file
  // in XDG_RUNTIME_DIR (else under /tmp): all of them private here.
  for (const sub of ["config", "share", "run"]) mkdirSync(join(dir, sub));
  if (ids) for (const p of [dir, join(dir, "config"), join(dir, "share"), join(dir, "run")]) chownSync(p, ids.uid, ids.gid);
  const env: NodeJS.ProcessEnv = {
    PATH: process.env["PATH"] ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, "config"),
    XDG_DATA_HOME: join(dir, "share"),
    XDG_RUNTIME_DIR: join(dir, "run"),
    // initdb takes its encoding from the locale: UTF8, as the shared server's.
    LANG: "C.UTF-8",
    LC_ALL: "C.UTF-8",
  };
  const asUser = ids ? { uid: ids.uid, gid: ids.gid } : {};

  const keepers: Keeper[] = [];
  let stopped = false;
  const guard = watchdog(cleanupScript(dir));
  const unhook0 = onExit(() => {
    for (const k of keepers) if (k.child.exitCode === null && k.child.signalCode === null) k.child.kill("SIGKILL");
    execFileSync("sh", ["-c", cleanupScript(dir)], { stdio: "ignore", timeout: 30_000 });
  });
  const unhook = () => {
    unhook0();
    guard.kill("SIGKILL");
  };

  const ctl = (args: string[], timeoutMs = 90_000): Promise<string> =>
    new Promise((resolve, reject) => {
      execFile(autoctl, args, { env, cwd: dir, timeout: timeoutMs, encoding: "utf8", ...asUser }, (err, stdout, stderr) => {
        if (err) reject(new Error(`pg_autoctl ${args.join(" ")} failed: ${err.message}\n${stdout}${stderr.slice(-4000)}`));
        else resolve(stdout);
      });
    });

  const run = (name: string, pgdata: string): Keeper => {
    const child = spawn(autoctl, ["run", "--pgdata", pgdata], { env, cwd: dir, stdio: ["ignore", "pipe", "pipe"], ...asUser });
    const k: Keeper = { name, child, output: "", killed: false };
    if (child.pid !== undefined) writeFileSync(join(dir, `keeper-${name}.pid`), `${child.pid}\n`);
    const keep = (d: Buffer) => {
      k.output = (k.output + d.toString()).slice(-30_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    keepers.push(k);
    return k;
  };

  const [monitorPort, port1, port2, endpointPort] = [await serverPort(), await serverPort(), await serverPort(), await serverPort()];
  const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
  const nodes: FailoverNode[] = [
    { name: "node1", port: port1, pgdata: join(dir, "node1") },
    { name: "node2", port: port2, pgdata: join(dir, "node2") },
  ];
  const nodeUrl = (name: string, database = "postgres") => {
    const n = nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return `postgres://postgres@127.0.0.1:${n.port}/${database}`;
  };
  // The test's own connection to the monitor: reads the node table and sets the timings.
  const monitor = postgres(`postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`, { max: 1, connect_timeout: 2, onnotice: () => {} });

  async function state(): Promise<NodeState[]> {
    const rows = await monitor<
      Array<{ nodename: string; nodeport: number; reportedstate: string; goalstate: string; health: number }>
    >`select nodename, nodeport, reportedstate::text, goalstate::text, health from pgautofailover.node order by nodeid`;
    return rows.map((r) => ({ name: r.nodename, port: r.nodeport, reported: r.reportedstate, assigned: r.goalstate, health: r.health }));
  }

  // --- the endpoint ---------------------------------------------------------------------------
  let target: FailoverNode | undefined;
  const switches: EndpointSwitch[] = [];
  const history: Array<{ at: number; nodes: string }> = [];
  const sessions = new Set<{ client: Socket; upstream: Socket; node: string }>();
  const server: Server = createServer((client) => {
    const t = target;
    // No primary: the connection is accepted and closed, as HAProxy does with no server up.
    if (!t) {
      client.destroy();
      return;
    }
    const upstream = netConnect({ host: "127.0.0.1", port: t.port });
    const s = { client, upstream, node: t.name };
    sessions.add(s);
    const end = () => {
      sessions.delete(s);
      client.destroy();
      upstream.destroy();
    };
    // Postgres' protocol is many small messages: no Nagle delay on either side.
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.on("error", end);
    upstream.on("error", end);
    client.on("close", end);
    upstream.on("close", end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  /** The node both the monitor and the node itself call writable (at most one; none mid-failover). */
  const choose = (rows: NodeState[]): FailoverNode | undefined => {
    const writable = rows.filter((r) => WRITABLE.has(r.reported) && WRITABLE.has(r.assigned));
    const only = writable.length === 1 ? writable[0] : undefined;
    return only ? nodes.find((n) => n.name === only.name) : undefined;
  };
  const retarget = (next: FailoverNode | undefined) => {
    if (next?.name === target?.name && switches.length > 0) return;
    target = next;
    switches.push({ at: Date.now(), to: next?.name ?? null });
    // Sessions to a node that is no longer the primary end, as HAProxy's on-marked-down shutdown-sessions.
    for (const s of [...sessions]) if (s.node !== next?.name) s.upstream.destroy();
  };
  let polling: Promise<void> | undefined;
  const poll = () => {
    if (polling || stopped) return;
    polling = state()
      .then((rows) => {
        const nodes = rows.map((r) => `${r.name} ${r.reported}/${r.assigned}${r.health === 0 ? " (unhealthy)" : ""}`).join(", ");
        if (history.at(-1)?.nodes !== nodes) history.push({ at: Date.now(), nodes });
        retarget(choose(rows));
      })
      .catch(() => undefined)
      .finally(() => {
        polling = undefined;
      });
  };
  let poller: NodeJS.Timeout | undefined;

  async function stop(): Promise<void> {
    if (stopped) return;
    stopped = true;
    if (poller) clearInterval(poller);
    await polling;
    for (const s of sessions) {
      s.client.destroy();
      s.upstream.destroy();
    }
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await monitor.end({ timeout: 1 }).catch(() => undefined);
    // An orderly stop first (pg_autoctl stops its Postgres with pg_ctl -m fast), then whatever is left is killed.
    const running = keepers.filter((k) => k.child.exitCode === null && k.child.signalCode === null);
    await Promise.all(
      running.map(async (k) => {
        const gone = new Promise<void>((res) => k.child.once("exit", () => res()));
        k.child.kill("SIGTERM");
        const force = setTimeout(() => {
          for (const pid of processTree(k.child.pid ?? 0)) {
            try {
              process.kill(pid, "SIGKILL");
            } catch {
              // gone
            }
          }
        }, 15_000);
        await gone;
        clearTimeout(force);
      }),
    );
    try {
      // A postmaster killed with its keeper (killPrimary) left no one to stop; the script checks each pid first.
      const killed = nodes.filter((n) => keepers.some((k) => k.name === n.name && k.killed));
      for (const n of killed) {
        const pm = postmasterPid(n.pgdata);
        if (pm !== null && !liveWith(pm, n.pgdata)) removeOrphanSegment(n.pgdata);
      }
      execFileSync("sh", ["-c", cleanupScript(dir)], { stdio: "ignore", timeout: 30_000 });
    } finally {
      unhook();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  const logs = () => keepers.map((k) => `--- ${k.name}\n${k.output.slice(-3000)}`).join("\n");
  try {
    // --- monitor --------------------------------------------------------------------------------
    const monitorData = join(dir, "monitor");
    await ctl([
      "create",
      "monitor",
      "--pgdata",
      monitorData,
      "--pgport",
      String(monitorPort),
      "--hostname",
      "127.0.0.1",
      "--auth",
      "trust",
      "--no-ssl",
      "--pgctl",
      pgCtl,
    ]);
    // pg_autoctl's default is every address; trust auth stays on the loopback.
    await ctl(["config", "set", "--pgdata", monitorData, "postgresql.listen_addresses", "127.0.0.1"]);
    run("monitor", monitorData);
    await eventually(async () => (await monitor`select 1 from pg_extension where extname = 'pgautofailover'`).length === 1, {
      what: `the pg_auto_failover monitor on port ${monitorPort}`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    for (const [name, value] of Object.entries(MONITOR_SETTINGS)) await monitor.unsafe(`alter system set ${name} = ${Number(value)}`);
    await monitor`select pg_reload_conf()`;

    // --- primary, then the standby (cloned from it by pg_basebackup) -----------------------------
    const create = async (n: FailoverNode) => {
      await ctl([
        "create",
        "postgres",
        "--pgdata",
        n.pgdata,
        "--pgport",
        String(n.port),
        "--hostname",
        "127.0.0.1",
        "--listen",
        "127.0.0.1",
        "--name",
        n.name,
        "--auth",
        "trust",
        "--no-ssl",
        "--monitor",
        monitorUrl,
        "--pgctl",
        pgCtl,
      ]);
      for (const [name, value] of Object.entries(KEEPER_SETTINGS)) await ctl(["config", "set", "--pgdata", n.pgdata, name, String(value)]);
    };
    const [first, second] = nodes as [FailoverNode, FailoverNode];
    await create(first);
    // Appended last, so they win; the standby's copy of the data directory takes them too. The
    // stack opens up to 10 connections per process; fsync stays on (the test is about durability).
    appendFileSync(
      join(first.pgdata, "postgresql.conf"),
      ["", "# test/fault/private-failover.ts", "max_connections = 300", "shared_buffers = 32MB", "fsync = on", ""].join("\n"),
    );
    run(first.name, first.pgdata);
    await eventually(async () => (await state()).some((r) => r.name === first.name && r.reported === "single"), {
      what: `${first.name} to run as a single primary`,
      timeoutMs: 30_000,
      intervalMs: 100,
    });
    await create(second);
    run(second.name, second.pgdata);
    await eventually(
      async () => {
        const rows = await state();
        const by = (name: string) => rows.find((r) => r.name === name);
        return by(first.name)?.reported === "primary" && by(first.name)?.assigned === "primary" && by(second.name)?.reported === "secondary";
      },
      { what: `${first.name} primary and ${second.name} its synchronous standby`, timeoutMs: 45_000, intervalMs: 100 },
    );

    // --- the endpoint -----------------------------------------------------------------------------
    retarget(choose(await state()));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(endpointPort, "127.0.0.1", () => resolve());
    });
    poller = setInterval(poll, 200);
    poller.unref();
    await eventually(() => tcpOpen(endpointPort), { what: "the endpoint", timeoutMs: 10_000 });
  } catch (e) {
    const message = `${e instanceof Error ? e.message : String(e)}\n${logs()}`;
    await stop().catch(() => undefined);
    throw new Error(message, { cause: e });
  }

  return {
    url: `postgres://postgres@127.0.0.1:${endpointPort}/postgres`,
    endpointPort,
    monitorUrl,
    nodes,
    nodeUrl,
    state,
    target: () => target,
    switches,
    history,
    async killPrimary() {
      // Only from the steady state (a busy machine may have delayed a health check into a
      // transition): a primary, and a healthy synchronous standby ready to take over.
      const rows = await eventually(
        async () => {
          const now = await state();
          const steady =
            now.some((r) => r.reported === "primary" && r.assigned === "primary") &&
            now.some((r) => r.reported === "secondary" && r.assigned === "secondary" && r.health === 1);
          return steady ? now : false;
        },
        { what: "a primary and a healthy secondary", timeoutMs: 60_000, intervalMs: 100 },
      );
      const primary = choose(rows);
      if (!primary) throw new Error(`no primary to kill: ${JSON.stringify(rows)}`);
      const keeper = keepers.find((k) => k.name === primary.name && !k.killed);
      if (!keeper?.child.pid) throw new Error(`no running keeper for ${primary.name}`);
      keeper.killed = true;
      const pids = new Set(processTree(keeper.child.pid));
      const pm = postmasterPid(primary.pgdata);
      if (pm !== null && liveWith(pm, primary.pgdata)) for (const p of processTree(pm)) pids.add(p);
      const at = Date.now();
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone already
        }
      }
      // A backend forked after the snapshot above outlives it: every process still working in
      // the data directory (its cwd) is killed too, until none is left.
      await eventually(
        () => {
          const left = processesIn(primary.pgdata);
          for (const pid of left) {
            pids.add(pid);
            try {
              process.kill(pid, "SIGKILL");
            } catch {
              // gone already
            }
          }
          return left.length === 0 && [...pids].every((p) => !liveWith(p, ""));
        },
        { what: `${primary.name}'s processes to die`, timeoutMs: 10_000 },
      );
      return { node: primary.name, at, processes: pids.size };
    },
    log: (name) =>
      keepers
        .filter((k) => k.name === name)
        .map((k) => k.output)
        .join("\n"),
    stop,
  };
}
