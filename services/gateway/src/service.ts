import { fileURLToPath } from "node:url";
import { natsBlobStore } from "@tasksvc/blobs";
import { StartupError } from "@tasksvc/config";
import { SERVICES } from "@tasksvc/contracts";
import { ping } from "@tasksvc/nats";
import { defineService } from "@tasksvc/runtime";
import { buildGateway } from "./app.js";
import { createAuthenticator } from "./auth.js";
import { createOAuthIssuer } from "./oauth/issuer.js";
import { createClients } from "./clients.js";
import { GatewayConfig } from "./config.js";
import { createCharger } from "./pipeline/charger.js";
import { cursorCodec } from "./pipeline/cursors.js";
import { gatewayRepo } from "./repo/gateway-repo.js";
import { createEventStreams } from "./streams/event-streams.js";
import { createFanIn } from "./streams/fan-in.js";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../migrations", import.meta.url));

export const service = defineService({
  name: "gateway",
  schema: "gateway",
  migrations: MIGRATIONS_DIR,
  config: GatewayConfig,
  // It runs no transactions: one transaction connection, for the start-up check (decision 0011).
  db: { max: 10, txMax: 1 },
  async start({ cfg, log, db, nc, namespace, every, onStop, health }) {
    const repo = gatewayRepo(db.sql);
    const cursors = cursorCodec(await repo.secret("cursor"));
    if (cfg.OAUTH_SIGNING_KEYS.isDevKey) {
      log.warn(
        "OAUTH_SIGNING_KEYS is not set: the tokens of OAuth clients are signed with the public development key, so anyone can forge them; set OAUTH_SIGNING_KEYS outside development",
      );
    }
    const ownIssuer = cfg.OAUTH_TOKEN_ISSUER ?? cfg.PUBLIC_BASE_URL;
    if (ownIssuer !== undefined && ownIssuer === cfg.OAUTH_ISSUER) {
      throw new StartupError(
        "OAUTH_TOKEN_ISSUER (or PUBLIC_BASE_URL) equals OAUTH_ISSUER: the tokens of our own OAuth clients need an issuer of their own; set OAUTH_TOKEN_ISSUER to another value",
      );
    }
    // With PORT 0 and no PUBLIC_BASE_URL the address is known once the gateway listens, before any request.
    let gateway: { publicBaseUrl: string } | undefined;
    const oauthIssuer = await createOAuthIssuer({
      keys: cfg.OAUTH_SIGNING_KEYS.keys,
      audience: cfg.OAUTH_AUDIENCE,
      issuer: () => {
        const iss = ownIssuer ?? gateway?.publicBaseUrl;
        if (iss === undefined) throw new Error("the gateway's own OAuth issuer is known only once it listens");
        return iss;
      },
    });
    const clients = createClients(nc, { namespace, timeoutMs: cfg.RPC_TIMEOUT_MS, checkReplies: cfg.RPC_CHECK_REPLIES });
    const auth = createAuthenticator({
      nc,
      namespace,
      keys: clients.keys,
      log,
      issuer: cfg.OAUTH_ISSUER,
      audience: cfg.OAUTH_AUDIENCE,
      jwksUrl: cfg.OAUTH_JWKS_URL,
      publicKeyPem: cfg.OAUTH_PUBLIC_KEY,
      cacheTtlMs: cfg.AUTH_CACHE_TTL_MS,
      ours: oauthIssuer,
    });
    onStop(() => auth.stop());
    const charger = createCharger({ repo, log });
    onStop(() => charger.close());
    const blobs = cfg.BLOB_STORE.kind === "nats" ? await natsBlobStore(nc, namespace, { replicas: cfg.NATS_STREAM_REPLICAS }) : null;
    // So a rollout or `docker compose up --wait` goes green only when the stack can serve.
    for (const s of SERVICES) {
      if ("rpc" in s) health.check(`service:${s.rpc.service}`, async () => ((await ping(nc, namespace, s.rpc.service, 1000)) ? "ok" : "unreachable"));
    }
    // One reader of the task-event stream per replica, whatever the number of open streams.
    const eventStreams = createEventStreams({
      fanIn: createFanIn({ nc, namespace, log }),
      tasks: clients.tasks,
      auth,
      repo,
      log,
    });
    const app = buildGateway({
      log,
      eventStreams,
      auth,
      clients,
      bodyLimit: cfg.BODY_LIMIT_BYTES,
      repo,
      charger,
      cursors,
      blobs,
      health,
      publicBaseUrl: cfg.PUBLIC_BASE_URL,
      port: cfg.PORT,
      corsOrigins: cfg.CORS_ORIGINS,
      linkRate: cfg.LINK_RATE_LIMIT,
      trustProxy: cfg.TRUST_PROXY,
      bodyTimeoutMs: cfg.BODY_TIMEOUT,
      anonRate: cfg.ANON_RATE_LIMIT,
      acceptRate: cfg.INVITATION_ACCEPT_RATE_LIMIT,
      oauthIssuer,
      // The service answers a second execution from its own record, so a claim only has to outlive this replica's own wait (decision 0011).
      idempotencyLeaseMs: cfg.RPC_TIMEOUT_MS + 1_000,
    });
    gateway = app;
    every(60_000, "sweep", () => repo.sweep());
    // Registered last, so closed first: no new request reaches the charger or auth once they stop.
    onStop(() => app.close());
    // Before the app closes, which waits for every open connection: the streams end first, each told to resume elsewhere.
    onStop(() => eventStreams.stop());
    try {
      await app.listen({ port: cfg.PORT, host: "0.0.0.0" });
    } catch (e) {
      if ((e as { code?: string }).code === "EADDRINUSE")
        throw new StartupError(`PORT ${cfg.PORT} is already in use: stop the other process or set PORT to a free port`);
      throw e;
    }
    const address = app.server.address();
    const port = typeof address === "object" && address ? address.port : cfg.PORT;
    log.info({ port, namespace, public_base_url: app.publicBaseUrl }, "gateway listening");
    return { url: `http://127.0.0.1:${port}` };
  },
});
