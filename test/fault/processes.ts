import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import { SERVICES as REGISTRY, type ServiceName } from "@tasksvc/contracts";
import { ensureDatabase, withDefaultUser } from "@tasksvc/db";
import { dropDatabase, dropNamespace, eventually } from "@tasksvc/testing";
import { serverPort } from "./private-services.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** Every registered service, in the registry's start order (the gateway last). */
export const SERVICES: readonly ServiceName[] = REGISTRY.map((s) => s.name);
export type { ServiceName };

interface Replica {
  service: ServiceName;
  index: number;
  env: Record<string, string>;
  child: ChildProcess;
  output: string;
  /** Set when we kill it on purpose; any other exit is a failure the test reports. */
  expectedExit: boolean;
}

/** /readyz of one process: its status, or "timeout"/"error" when it did not answer within 2 s. */
export async function readyz(url: string): Promise<number | "timeout" | "error"> {
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
    await res.text();
    return res.status;
  } catch (e) {
    return (e as { name?: string }).name === "TimeoutError" ? "timeout" : "error";
  }
}

/** Milliseconds as seconds for a printed figure ("never" for one that did not happen). */
export const seconds = (ms: number) => (Number.isFinite(ms) ? `${(ms / 1000).toFixed(2)} s` : "never");

export interface ProcessStackOptions {
  /** A Postgres base URL (any database name; the stack uses its own). Default: the shared local one. */
  pgBase?: string;
  natsUrl?: string;
  /** The stack's database name (default: a fresh tasksvc_fault_<suffix>), for settings that must name it up front. */
  database?: string;
  replicas?: Partial<Record<ServiceName, number>>;
  env?: Record<string, string>;
  /** Settings of one service's replicas only (over `env`), e.g. { tasks: { LOG_LEVEL: "info" } }. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /**
   * Settings of one replica only (over `serviceEnv`), e.g. a NATS_URL naming another server of a
   * cluster for each replica: (service, index) => ({ NATS_URL: … }).
   */
  replicaEnv?: (service: ServiceName, index: number) => Record<string, string> | undefined;
}

export interface UnexpectedExit {
  service: ServiceName;
  index: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
}

/**
 * The whole stack as separate processes, one per replica, as in production (services/<name>/dist/
 * main.js), on its own database and NATS namespace. Replicas can be killed with any signal and
 * started again with the same settings (a gateway keeps its port). Exits we did not cause are
 * collected in `unexpectedExits` so a test can assert there were none.
 */
export async function startProcessStack(opts: ProcessStackOptions = {}) {
  const suffix = `${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const pgBase = withDefaultUser(opts.pgBase ?? process.env["DATABASE_URL"] ?? "postgres://127.0.0.1:5432/postgres");
  const natsUrl = opts.natsUrl ?? process.env["NATS_URL"] ?? "nats://127.0.0.1:4222";
  const db = new URL(pgBase);
  db.pathname = `/${opts.database ?? `tasksvc_fault_${suffix}`}`;
  const databaseUrl = db.toString();
  const namespace = `f_${suffix}`;
  await ensureDatabase(databaseUrl);

  const replicas: Replica[] = [];
  const unexpectedExits: UnexpectedExit[] = [];
  // OPS_PORT 0: replicas of one service share this host, so each takes a free ops port.
  // ANON_RATE_LIMIT off: every load and fuzz request comes from 127.0.0.1, refused credentials included.
  const common = {
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    LOG_LEVEL: "warn",
    OPS_PORT: "0",
    ANON_RATE_LIMIT: "off",
    // Due-date events would join the events the load's checks count one per change.
    DUE_TICK: "1h",
    ...(opts.env ?? {}),
  };

  function spawnReplica(r: Omit<Replica, "child" | "output" | "expectedExit">): Replica {
    const child = spawn(process.execPath, [`services/${r.service}/dist/main.js`], {
      cwd: root,
      env: { ...process.env, ...common, ...r.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const rep: Replica = { ...r, child, output: "", expectedExit: false };
    const keep = (d: Buffer) => {
      // Keep the tail only: a long run under load can log a lot.
      rep.output = (rep.output + d.toString()).slice(-20_000);
    };
    child.stdout?.on("data", keep);
    child.stderr?.on("data", keep);
    child.on("exit", (code, signal) => {
      if (!rep.expectedExit) unexpectedExits.push({ service: r.service, index: r.index, code, signal, output: rep.output });
    });
    return rep;
  }

  async function gatewayReady(url: string): Promise<boolean> {
    const res = await fetch(`${url}/readyz`);
    return res.status === 200;
  }

  const gatewayUrls: string[] = [];
  // One replica of each service unless a test asks for more.
  const counts: Partial<Record<ServiceName, number>> = opts.replicas ?? {};
  // Services first (their migrations run under a lock), then the gateways.
  const planned: Array<{ service: ServiceName; index: number; env: Record<string, string> }> = [];
  for (const service of SERVICES) {
    for (let index = 0; index < (counts[service] ?? 1); index++) {
      planned.push({ service, index, env: { ...(opts.serviceEnv?.[service] ?? {}), ...(opts.replicaEnv?.(service, index) ?? {}) } });
    }
  }
  // A gateway's port is chosen below the ephemeral range: one chosen in it (a port the kernel
  // picked) could be taken as the source port of any outgoing connection before the gateway,
  // seconds later, binds it. Ports a test chose for its replicas are not bound yet either.
  const taken = new Set(
    planned
      .flatMap((p) => [p.env["PORT"], p.env["OPS_PORT"]])
      .filter((v) => v !== undefined && v !== "0")
      .map(Number),
  );
  for (const p of planned) {
    if (p.service === "gateway") {
      let port = await serverPort();
      while (taken.has(port)) port = await serverPort();
      taken.add(port);
      p.env["PORT"] = String(port);
      gatewayUrls.push(`http://127.0.0.1:${port}`);
    }
    replicas.push(spawnReplica(p));
  }

  const find = (service: ServiceName, index: number): Replica => {
    const r = replicas.find((x) => x.service === service && x.index === index);
    if (!r) throw new Error(`no replica ${service}#${index}`);
    return r;
  };

  /** Ready when every gateway answers /readyz and an authenticated round trip works (keys is up). */
  async function waitReady(timeoutMs = 60_000): Promise<void> {
    await eventually(
      async () => {
        if (unexpectedExits.length)
          throw new Error(`a replica exited: ${JSON.stringify(unexpectedExits.map(({ output, ...e }) => ({ ...e, output: output.slice(-2000) })))}`);
        for (const url of gatewayUrls) if (!(await gatewayReady(url))) return false;
        return true;
      },
      { what: "the stack to be ready", timeoutMs, intervalMs: 100 },
    );
  }

  try {
    await waitReady();
  } catch (e) {
    // What was not ready, and what each replica said: a start that times out explains itself.
    const readiness = await Promise.all(
      gatewayUrls.map(
        async (url) =>
          `${url}/readyz: ${await fetch(`${url}/readyz`).then(
            (r) => r.text(),
            (err: unknown) => String(err),
          )}`,
      ),
    );
    const outputs = replicas.map((r) => `--- ${r.service}#${r.index}\n${r.output.slice(-1500)}`);
    for (const r of replicas) {
      r.expectedExit = true;
      r.child.kill("SIGKILL");
    }
    throw new Error(`${e instanceof Error ? e.message : String(e)}\n${readiness.join("\n")}\n${outputs.join("\n")}`, { cause: e });
  }

  return {
    databaseUrl,
    natsUrl,
    namespace,
    gatewayUrls,
    unexpectedExits,
    waitReady,
    /** Kills one replica (SIGKILL by default) and waits until the process is gone. */
    async kill(service: ServiceName, index = 0, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
      const r = find(service, index);
      r.expectedExit = true;
      if (r.child.exitCode !== null || r.child.signalCode !== null) return;
      const gone = new Promise<void>((res) => r.child.once("exit", () => res()));
      r.child.kill(signal);
      await gone;
    },
    /** Sends a signal that leaves the process alive (SIGSTOP pauses it, SIGCONT resumes it). */
    signal(service: ServiceName, index: number, signal: "SIGSTOP" | "SIGCONT"): void {
      find(service, index).child.kill(signal);
    },
    /** Starts a killed replica again with the same settings (a gateway on the same port). */
    restart(service: ServiceName, index = 0): void {
      const i = replicas.findIndex((x) => x.service === service && x.index === index);
      const old = replicas[i];
      if (!old) throw new Error(`no replica ${service}#${index}`);
      if (old.child.exitCode === null && old.child.signalCode === null) throw new Error(`${service}#${index} is still running`);
      replicas[i] = spawnReplica({ service, index, env: old.env });
    },
    /** The last lines a replica printed (for failure messages). */
    output(service: ServiceName, index = 0): string {
      return find(service, index).output;
    },
    async stop(): Promise<void> {
      await Promise.all(
        replicas.map(async (r) => {
          r.expectedExit = true;
          if (r.child.exitCode !== null || r.child.signalCode !== null) return;
          const gone = new Promise<void>((res) => r.child.once("exit", () => res()));
          r.child.kill("SIGTERM");
          const force = setTimeout(() => r.child.kill("SIGKILL"), 10_000);
          await gone;
          clearTimeout(force);
        }),
      );
      await dropNamespace(natsUrl, namespace).catch(() => undefined);
      await dropDatabase(databaseUrl).catch(() => undefined);
    },
  };
}
export type ProcessStack = Awaited<ReturnType<typeof startProcessStack>>;
