import { fileURLToPath } from "node:url";
import { serviceSettings, settings } from "@tasksvc/config";
import { keysInvalidationSubject, keysRpc } from "@tasksvc/contracts";
import { encodeJson } from "@tasksvc/nats";
import { defineService } from "@tasksvc/runtime";
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

/** The keys service: organizations, members, API keys, plans; the development token issuer. */
export const service = defineService({
  name: "keys",
  schema: "keys",
  migrations: MIGRATIONS_DIR,
  config: KeysConfig,
  async start({ cfg, db, nc, namespace, serve, every }) {
    const repo = keysRepo(db.sql);
    const svc = keysService({
      repo,
      tx: (fn) => db.tx((t) => fn(keysRepo(t))),
      issuer: devIssuer(repo, cfg.OAUTH_ISSUER, cfg.OAUTH_AUDIENCE),
      async invalidate(organizationId) {
        nc.publish(keysInvalidationSubject(namespace), encodeJson({ organization_id: organizationId }));
        // Flushed before the caller's reply goes out: NATS delivers a connection's messages in
        // order, so every gateway has the invalidation queued before this revoke's reply arrives.
        await nc.flush();
      },
    });
    // Idempotency records hold a new key's secret for their 24 h: removed hourly once past it.
    every(60 * 60_000, "idempotency sweep", () => repo.idempotency.sweep());
    serve(keysRpc, keysHandlers(svc));
  },
});
