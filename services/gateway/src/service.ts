import { StartupError } from "@tasksvc/config";
import { boardsRpc, keysRpc, tasksRpc } from "@tasksvc/contracts";
import { fileURLToPath } from "node:url";
import { checkDb, createDb, ensureDatabase, migrate } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { client, connectNats } from "@tasksvc/nats";
import { buildGateway } from "./app.js";
import { createAuthenticator } from "./auth.js";
import { cursorCodec } from "./policies/cursors.js";
import { createCharger } from "./policies/limits.js";
import { gatewayRepo } from "./repo/gateway-repo.js";
import type { GatewayConfig } from "./config.js";

const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));
const SWEEP_EVERY_MS = 60_000;

/** Starts one gateway replica and listens on PORT (0 = any free port; see `url`). */
export async function startGateway(cfg: GatewayConfig, log: Logger) {
  await ensureDatabase(cfg.DATABASE_URL);
  await migrate({ url: cfg.DATABASE_URL, schema: "gateway", dir: MIGRATIONS_DIR, log });
  const db = createDb({ url: cfg.DATABASE_URL, schema: "gateway", max: 10, txMax: 1 });
  await checkDb(db, cfg.DATABASE_URL);
  const repo = gatewayRepo(db.sql);
  const cursors = cursorCodec(await repo.secret("cursor"));
  const charger = createCharger({ repo, log });
  const nc = await connectNats({ url: cfg.NATS_URL, name: "gateway" });
  const rpc = { namespace: cfg.NATS_NAMESPACE, timeoutMs: cfg.RPC_TIMEOUT_MS };
  const keys = client(nc, keysRpc, rpc);
  const tasks = client(nc, tasksRpc, rpc);
  const boards = client(nc, boardsRpc, rpc);
  const auth = createAuthenticator({
    nc,
    namespace: cfg.NATS_NAMESPACE,
    keys,
    log,
    issuer: cfg.OAUTH_ISSUER,
    audience: cfg.OAUTH_AUDIENCE,
    jwksUrl: cfg.OAUTH_JWKS_URL,
    publicKeyPem: cfg.OAUTH_PUBLIC_KEY,
    cacheTtlMs: cfg.AUTH_CACHE_TTL_MS,
  });
  const app = buildGateway({
    log,
    auth,
    clients: { keys, tasks, boards },
    sql: db.sql,
    nc,
    bodyLimit: cfg.BODY_LIMIT_BYTES,
    repo,
    charger,
    cursors,
    // Past the RPC timeout, an execution that never reported back is abandoned.
    idempotencyLeaseMs: cfg.RPC_TIMEOUT_MS + 10_000,
    // Where the service records the key itself, a second execution is answered from that record,
    // so the claim only has to outlive this replica's own wait (decision 0011).
    serviceIdempotencyLeaseMs: cfg.RPC_TIMEOUT_MS + 1_000,
  });
  const sweeper = setInterval(() => {
    repo.sweep().catch((err: unknown) => log.warn({ err }, "sweep failed"));
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  try {
    await app.listen({ port: cfg.PORT, host: "0.0.0.0" });
  } catch (e) {
    clearInterval(sweeper);
    await charger.close();
    await nc.drain();
    await db.end({ timeout: 1 });
    if ((e as { code?: string }).code === "EADDRINUSE") throw new StartupError(`PORT ${cfg.PORT} is already in use: stop the other process or set PORT to a free port`);
    throw e;
  }
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : cfg.PORT;
  log.info({ port, namespace: cfg.NATS_NAMESPACE }, "gateway listening");
  return {
    url: `http://127.0.0.1:${port}`,
    async stop() {
      clearInterval(sweeper);
      await app.close();
      await charger.close();
      auth.stop();
      await nc.drain();
      await db.end({ timeout: 5 });
    },
  };
}
