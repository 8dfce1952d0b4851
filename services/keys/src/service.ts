import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { keysInvalidationSubject, keysRpc } from "@tasksvc/contracts";
import { checkDb, createDb, databaseErrorAsAppError, ensureDatabase, migrate } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { connectNats, encodeJson, serve } from "@tasksvc/nats";
import { z } from "zod";
import { devIssuer } from "./domain/dev-issuer.js";
import { keysService } from "./domain/keys-service.js";
import { keysRepo } from "./repo/keys-repo.js";
import { keysHandlers } from "./rpc.js";

export const KeysConfig = z.object({
  ...serviceSettings,
  OAUTH_ISSUER: settings.OAUTH_ISSUER,
  OAUTH_AUDIENCE: settings.OAUTH_AUDIENCE,
});
export type KeysConfig = z.output<typeof KeysConfig>;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));
const SCHEMA = "keys";
const SWEEP_EVERY_MS = 60 * 60_000;

/** Starts one keys-service replica: migrate, connect, serve. Returns a stop that drains. */
export async function startKeys(cfg: KeysConfig, log: Logger) {
  await ensureDatabase(cfg.DATABASE_URL);
  await migrate({ url: cfg.DATABASE_URL, schema: SCHEMA, dir: MIGRATIONS_DIR, log });
  const db = createDb({ url: cfg.DATABASE_URL, schema: SCHEMA });
  await checkDb(db, cfg.DATABASE_URL);
  const nc = await connectNats({ url: cfg.NATS_URL, name: "keys" });
  const repo = keysRepo(db.sql);
  const svc = keysService({
    repo,
    tx: (fn) => db.tx((t) => fn(keysRepo(t as never))) as never,
    issuer: devIssuer(repo, cfg.OAUTH_ISSUER, cfg.OAUTH_AUDIENCE),
    async invalidate(organizationId) {
      nc.publish(keysInvalidationSubject(cfg.NATS_NAMESPACE), encodeJson({ organization_id: organizationId }));
      // Flushed before the caller's reply goes out: NATS delivers a connection's messages in
      // order, so every gateway has the invalidation queued before this revoke's reply arrives.
      await nc.flush();
    },
  });
  // Idempotency records hold a new key's secret for their 24 h: removed hourly once past it.
  const sweeper = setInterval(() => {
    repo.idempotency.sweep().catch((err: unknown) => log.warn({ err }, "idempotency sweep failed"));
  }, SWEEP_EVERY_MS);
  sweeper.unref();
  const served = serve(nc, keysRpc, keysHandlers(svc), { namespace: cfg.NATS_NAMESPACE, log, classify: databaseErrorAsAppError });
  log.info({ namespace: cfg.NATS_NAMESPACE }, "keys service ready");
  return {
    async stop() {
      clearInterval(sweeper);
      await served.drain();
      await nc.drain();
      await db.end({ timeout: 5 });
    },
  };
}
