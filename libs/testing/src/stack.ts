import { randomBytes } from "node:crypto";
import { execSync } from "node:child_process";
import { parseConfig } from "@tasksvc/config";
import { SERVICES, type ServiceName } from "@tasksvc/contracts";
import { ensureDatabase, quoteIdent, withDefaultUser } from "@tasksvc/db";
import { connectNats, deleteNamespaceStreams } from "@tasksvc/nats";
import { createLogger, type Logger } from "@tasksvc/logger";
import { isServiceDefinition, startService, type DbConfig, type ServiceDefinition } from "@tasksvc/runtime";
import postgres from "postgres";
import { connect } from "@tasksvc/nats";

export interface StackInfo {
  gatewayUrls: string[];
  databaseUrl: string;
  natsUrl: string;
  namespace: string;
}

export function gatewayUrl(stack: Pick<StackInfo, "gatewayUrls">, replica = 0): string {
  const url = stack.gatewayUrls[replica];
  if (url === undefined) throw new Error(`the stack has no gateway replica #${replica} (it has ${stack.gatewayUrls.length})`);
  return url;
}

export interface StartedStack extends StackInfo {
  opsUrls: Partial<Record<ServiceName, string[]>>;
  stop(): Promise<void>;
}

async function reachable(check: () => Promise<unknown>): Promise<boolean> {
  try {
    await check();
    return true;
  } catch {
    return false;
  }
}

/** Testcontainers only when DATABASE_URL / NATS_URL are unreachable and a Docker engine exists. */
async function locateServices(): Promise<{ pgBase: string; natsUrl: string; cleanup: () => Promise<void> }> {
  const pgBase = withDefaultUser(process.env["DATABASE_URL"] || "postgres://127.0.0.1:5432/postgres");
  const natsUrl = process.env["NATS_URL"] || "nats://127.0.0.1:4222";
  const pgOk = await reachable(async () => {
    const sql = postgres(pgBase, { max: 1, connect_timeout: 3, onnotice: () => {} });
    try {
      await sql`select 1`;
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
  const natsOk = await reachable(async () => (await connect({ servers: natsUrl, timeout: 3000 })).close());
  if (pgOk && natsOk) return { pgBase, natsUrl, cleanup: async () => {} };

  let docker = false;
  try {
    execSync("docker info", { stdio: "ignore", timeout: 5000 });
    docker = true;
  } catch {
    docker = false;
  }
  if (!docker) {
    throw new Error(
      `Tests need Postgres (${pgOk ? "ok" : `unreachable at ${pgBase}`}) and NATS with JetStream (${natsOk ? "ok" : `unreachable at ${natsUrl}`}); ` +
        "start them (see docs/operations.md) or run where Docker can start testcontainers.",
    );
  }
  const { GenericContainer, Wait } = await import("testcontainers");
  const started: Array<{ stop(): Promise<unknown> }> = [];
  let pg = pgBase;
  let nats = natsUrl;
  if (!pgOk) {
    const c = await new GenericContainer("postgres:15")
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: "trust" })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start();
    started.push(c);
    pg = `postgres://postgres@${c.getHost()}:${c.getMappedPort(5432)}/postgres`;
  }
  if (!natsOk) {
    const c = await new GenericContainer("nats:2.9")
      .withCommand(["-js"])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    started.push(c);
    nats = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
  }
  return { pgBase: pg, natsUrl: nats, cleanup: async () => void (await Promise.all(started.map((c) => c.stop()))) };
}

export interface StackOptions {
  /** Over the registry's `testReplicas`. */
  replicas?: Partial<Record<ServiceName, number>>;
  env?: Record<string, string>;
  log?: Logger;
}

/** Loaded by name, so that this library depends on no service. */
export async function loadService(name: ServiceName): Promise<ServiceDefinition<DbConfig, unknown>> {
  const mod: unknown = await import(`@tasksvc/${name}`);
  const def = typeof mod === "object" && mod !== null && "service" in mod ? mod.service : undefined;
  if (!isServiceDefinition(def) || def.name !== name) throw new Error(`@tasksvc/${name} exports no \`service\` definition named "${name}"`);
  return def;
}

/** One process for the whole stack; its own database and NATS namespace, dropped by stop(). */
export async function startStack(opts: StackOptions = {}): Promise<StartedStack> {
  const { pgBase, natsUrl, cleanup } = await locateServices();
  const suffix = `${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  const dbUrl = new URL(pgBase);
  dbUrl.pathname = `/tasksvc_test_${suffix}`;
  const databaseUrl = dbUrl.toString();
  const namespace = `t_${suffix}`;
  const log = opts.log ?? createLogger({ service: "test", level: process.env["TEST_LOG_LEVEL"] ?? "silent" });
  const env = {
    OPS_PORT: "0",
    RPC_CHECK_REPLIES: "true",
    // Every test calls from 127.0.0.1, and the route tests send hundreds of refused credentials: the per-address limit has tests of its own.
    ANON_RATE_LIMIT: "off",
    // Likewise for accepting invitations, whose limit (10 a minute) has a test with a gateway of its own.
    INVITATION_ACCEPT_RATE_LIMIT: "off",
    // Two test files' stacks and the shared one meet on one Postgres of 100 connections: at 10 a process they
    // passed it under load, and a 53300 answers 503.
    DATABASE_POOL_SIZE: "5",
    // Due-date events would join the exact event lists other tests expect, on a date that depends on
    // the day the suite runs: the scheduler checks once at start, then hourly. Their tests set their own.
    DUE_TICK: "1h",
    // Gateways on port 0 each have their own address: one issuer for our OAuth clients' tokens, as
    // replicas behind one PUBLIC_BASE_URL have, so a token from one replica is accepted by the others.
    OAUTH_TOKEN_ISSUER: "http://tasksvc.test",
    ...opts.env,
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    PORT: "0",
    // Silent by default: tests read answers, not logs.
    LOG_LEVEL: process.env["TEST_SERVICE_LOG_LEVEL"] ?? "silent",
  };

  await ensureDatabase(databaseUrl);
  const stoppers: Array<() => Promise<void>> = [];
  const gatewayUrls: string[] = [];
  const opsUrls: Partial<Record<ServiceName, string[]>> = {};
  try {
    // A service's replicas start together on purpose: migrations must wait for each other, not fail.
    for (const entry of SERVICES) {
      const def = await loadService(entry.name);
      const count = opts.replicas?.[entry.name] ?? entry.testReplicas;
      const started = await Promise.all(
        Array.from({ length: count }, (_, i) =>
          startService(def, parseConfig(def.config, env, { service: entry.name }), log.child({ service: entry.name, replica: i })),
        ),
      );
      stoppers.push(...started.map((r) => () => r.stop()));
      opsUrls[entry.name] = started.flatMap((r) => (r.opsPort === undefined ? [] : [`http://127.0.0.1:${r.opsPort}`]));
      if (entry.name === "gateway") gatewayUrls.push(...started.map(urlOf));
    }
    return {
      gatewayUrls,
      opsUrls,
      databaseUrl,
      natsUrl,
      namespace,
      async stop() {
        await Promise.allSettled(stoppers.reverse().map((s) => s()));
        await dropNamespace(natsUrl, namespace);
        await dropDatabase(databaseUrl);
        await cleanup();
      },
    };
  } catch (e) {
    await Promise.allSettled(stoppers.map((s) => s()));
    await dropNamespace(natsUrl, namespace).catch(() => undefined);
    await dropDatabase(databaseUrl);
    await cleanup();
    throw e;
  }
}

function urlOf(replica: object): string {
  if ("url" in replica && typeof replica.url === "string") return replica.url;
  throw new Error("a gateway replica started without a url");
}

export async function dropNamespace(natsUrl: string, namespace: string): Promise<void> {
  const nc = await connectNats({ url: natsUrl, name: "test-cleanup" });
  try {
    await deleteNamespaceStreams(nc, namespace);
  } finally {
    await nc.drain();
  }
}

export async function dropDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.slice(1));
  u.pathname = "/postgres";
  const sql = postgres(u.toString(), { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
  } finally {
    await sql.end({ timeout: 1 });
  }
}
