import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { AuditMessage, auditStream, keysInvalidationSubject, keysRpc } from "@tasksvc/contracts";
import { startLocalAuditRelay } from "@tasksvc/db";
import { auditStreamSpec, consume, encodeJson, pageBudget } from "@tasksvc/nats";
import { sealingKeySetting, secretBox } from "@tasksvc/secrets";
import { defineService, turnBatches } from "@tasksvc/runtime";
import { z } from "zod";
import { auditSystem, chainIn } from "./domain/audit.js";
import { devIssuer } from "./domain/dev-issuer.js";
import { keysService } from "./domain/keys-service.js";
import { keysResources } from "./domain/resources.js";
import { DEV_KEYS_SECRET_KEY } from "./domain/secrets.js";
import { keysHandlers } from "./rpc.js";

export const KeysConfig = z.object({
  ...serviceSettings,
  OAUTH_ISSUER: settings.OAUTH_ISSUER,
  OAUTH_AUDIENCE: settings.OAUTH_AUDIENCE,
  /** Read only to know whether the deployment has a real OAuth issuer: either one turns the development issuer off. */
  OAUTH_JWKS_URL: settings.OAUTH_JWKS_URL,
  OAUTH_PUBLIC_KEY: settings.OAUTH_PUBLIC_KEY,
  /** The only place a new key's secret is kept, for the 24 h in which a retry gets the same key back (decision 0022). */
  KEYS_SECRET_KEY: sealingKeySetting("KEYS_SECRET_KEY", DEV_KEYS_SECRET_KEY),
  /** How often audit events past their year are deleted. */
  AUDIT_SWEEP_INTERVAL: settings.duration("1h").refine((ms) => ms >= 100 && ms <= 86_400_000, "expected a duration between 100ms and 1d"),
});
export type KeysConfig = z.output<typeof KeysConfig>;

/** Audit events chained per transaction, and the chain consumer's messages in flight per replica. */
const AUDIT_CHAIN_BATCH = 64;

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

export const service = defineService({
  name: "keys",
  schema: "keys",
  migrations: MIGRATIONS_DIR,
  config: KeysConfig,
  streams: (namespace) => [auditStreamSpec(namespace)],
  async start({ cfg, db, nc, namespace, serve, every, onStop, log, health }) {
    if (cfg.KEYS_SECRET_KEY.isDevKey) {
      log.warn("KEYS_SECRET_KEY is not set: new API keys are sealed in their idempotency records with the public development key; set it outside development");
    }
    const devIssuerOn = cfg.OAUTH_JWKS_URL === undefined && cfg.OAUTH_PUBLIC_KEY === undefined;
    if (devIssuerOn) {
      log.warn(
        "OAUTH_JWKS_URL is not set: admin issue-token signs access tokens with the development issuer, whose key is kept in the database; set OAUTH_JWKS_URL (your OAuth issuer's JWKS) or OAUTH_PUBLIC_KEY outside development",
      );
    }
    // The chain is this service's: its own audit events go from its outbox straight into it, in
    // the relay's transaction, instead of out to the audit stream and back.
    const auditRelay = startLocalAuditRelay({ db, service: "keys", log, chain: chainIn });
    onStop(() => auditRelay.stop());
    const res = keysResources(db, {
      written: () => auditRelay.notify(),
      box: secretBox(cfg.KEYS_SECRET_KEY.keyMaterial, "KEYS_SECRET_KEY"),
      async invalidate(organizationId) {
        nc.publish(keysInvalidationSubject(namespace), encodeJson({ organization_id: organizationId }));
        // Flushed before the caller's reply goes out: NATS delivers a connection's messages in
        // order, so every gateway has the invalidation queued before this revoke's reply arrives.
        await nc.flush();
      },
      log,
    });
    const issuer = devIssuer(res, { issuer: cfg.OAUTH_ISSUER, audience: cfg.OAUTH_AUDIENCE, enabled: devIssuerOn });
    // The key comes from the environment, so no migration could seal it; safe with replicas starting together.
    const sealed = await issuer.sealStoredKeys();
    if (sealed > 0) log.info({ sealed }, "sealed the development issuer's signing key under KEYS_SECRET_KEY");
    const audit = auditSystem(db, res, { pageBytes: pageBudget(nc) });
    // The one place audit events are numbered and chained; its replicas share the durable consumer.
    // The events of one fetch are chained in one transaction (two round trips for the lot).
    const store = turnBatches<AuditMessage, "stored" | "duplicate">(AUDIT_CHAIN_BATCH, (ms) => audit.storeAll(ms));
    const chain = await consume(nc, {
      stream: auditStream(namespace),
      durable: "keys-audit-chain",
      schema: AuditMessage,
      concurrency: AUDIT_CHAIN_BATCH,
      ackWaitMs: 30_000,
      // Idempotent: an ack the server never got brings back an event that is found stored.
      confirmAcks: false,
      log,
      health,
      handle: async (m) => {
        await store(m);
        return "ack";
      },
    });
    onStop(() => chain.stop());
    every(cfg.AUDIT_SWEEP_INTERVAL, "audit retention sweep", () => audit.sweep());
    const svc = keysService(res, { issuer });
    every(60 * 60_000, "idempotency sweep", () => res.repo.idempotency.sweep());
    // A revoked token's record is needed only until the token expires on its own.
    every(10 * 60_000, "revoked token sweep", () => res.repo.sweepRevokedTokens());
    serve(keysRpc, keysHandlers(svc, audit));
  },
});
