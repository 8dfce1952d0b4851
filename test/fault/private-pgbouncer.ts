import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { asPostgres, onExit, pgUserIds, serverPort, tcpOpen, watchdog } from "./private-services.js";

const INSTALL = "apt-get install -y pgbouncer (Debian's package; `make tools` installs it), or name another binary with PGBOUNCER";

/** One entry of PgBouncer's [databases]: the name clients connect to and what it stands for. */
export interface BouncerDatabase {
  /** The database name clients use (`postgres://…:<port>/<alias>`). */
  alias: string;
  /** The Postgres database it reaches. */
  dbname: string;
  /** Run on each new server connection, before any client uses it (a service's search_path). */
  connectQuery?: string;
}

export interface PrivatePgBouncer {
  port: number;
  /** postgres://<user>@127.0.0.1:<port>/<alias> */
  url(alias: string): string;
  /** `SHOW POOLS` figures per alias, read from PgBouncer's admin console. */
  pools(): Promise<Array<{ database: string; sv_active: number; sv_idle: number; sv_used: number; cl_active: number; cl_waiting: number }>>;
  stop(): Promise<void>;
  log(): string;
}

/**
 * PgBouncer (Debian's 1.18) in transaction pooling mode, on a free port, in front of a Postgres
 * on 127.0.0.1:<pgPort>: trust auth for the user the tests run as, `poolSize` server connections
 * at most per database entry. It refuses to run as root, so as root it runs as `postgres`.
 */
export async function startPrivatePgBouncer(opts: { pgPort: number; databases: BouncerDatabase[]; poolSize: number }): Promise<PrivatePgBouncer> {
  const bin = process.env["PGBOUNCER"] || "pgbouncer";
  try {
    execFileSync(bin, ["--version"], { stdio: "ignore" });
  } catch {
    throw new Error(`PgBouncer is not installed (${bin}): ${INSTALL}`);
  }
  const dir = mkdtempSync(join(tmpdir(), "tasksvc-fault-pgbouncer-"));
  const port = await serverPort();
  const user = userInfo().username;
  const quote = (v: string) => `'${v.replace(/'/g, "''")}'`;
  const databases = opts.databases.map(
    (d) => `${d.alias} = host=127.0.0.1 port=${opts.pgPort} dbname=${d.dbname}${d.connectQuery ? ` connect_query=${quote(d.connectQuery)}` : ""}`,
  );
  writeFileSync(join(dir, "users.txt"), `"${user}" ""\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      ...databases,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      `admin_users = ${user}`,
      "pool_mode = transaction",
      `default_pool_size = ${opts.poolSize}`,
      "max_client_conn = 1000",
      // How long a client may wait for a server connection before PgBouncer refuses it.
      "query_wait_timeout = 30",
      `pidfile = ${join(dir, "pgbouncer.pid")}`,
      `logfile = ${join(dir, "pgbouncer.log")}`,
      "",
    ].join("\n"),
  );
  const ids = asPostgres ? pgUserIds() : undefined;
  if (ids) chownSync(dir, ids.uid, ids.gid);

  const child: ChildProcess = spawn(bin, [join(dir, "pgbouncer.ini")], { stdio: ["ignore", "pipe", "pipe"], ...(ids ?? {}) });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => void (output = (output + d.toString()).slice(-20_000)));
  child.stderr?.on("data", (d: Buffer) => void (output = (output + d.toString()).slice(-20_000)));
  const guard = watchdog(`kill -9 ${child.pid} 2>/dev/null; rm -rf '${dir}'`);
  const unhook = onExit(() => {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });
  const log = () => `${output}${existsSync(join(dir, "pgbouncer.log")) ? readFileSync(join(dir, "pgbouncer.log"), "utf8").slice(-8000) : ""}`;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise<void>((r) => child.once("exit", () => r()));
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 5000);
      await gone;
      clearTimeout(force);
    }
    unhook();
    guard.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${log()}`);
        return tcpOpen(port);
      },
      { what: `PgBouncer on port ${port}`, timeoutMs: 20_000, intervalMs: 50 },
    );
  } catch (e) {
    await stop();
    throw e;
  }

  const url = (alias: string) => `postgres://${user}@127.0.0.1:${port}/${alias}`;
  return {
    port,
    url,
    async pools() {
      // The admin console speaks the simple query protocol only.
      const admin = postgres(url("pgbouncer"), { max: 1, prepare: false, fetch_types: false, onnotice: () => {} });
      try {
        const rows = await admin.unsafe("SHOW POOLS").simple();
        return rows.map((r) => ({
          database: String(r["database"]),
          sv_active: Number(r["sv_active"]),
          sv_idle: Number(r["sv_idle"]),
          sv_used: Number(r["sv_used"]),
          cl_active: Number(r["cl_active"]),
          cl_waiting: Number(r["cl_waiting"]),
        }));
      } finally {
        await admin.end({ timeout: 1 });
      }
    },
    stop,
    log,
  };
}
