import { createHash } from "node:crypto";
import { type Identity, KeysInvalidation, SCOPES, keysInvalidationSubject, type keysRpc, type RpcContext, type Scope } from "@tasksvc/contracts";
import { hashApiKey } from "@tasksvc/secrets";
import { AppError } from "@tasksvc/errors";
import type { Logger } from "@tasksvc/logger";
import { decodeJson, type NatsConnection, type RpcClient } from "@tasksvc/nats";
import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, errors as joseErrors, importSPKI, jwtVerify, type JWTVerifyGetKey, type JWTPayload } from "jose";
import type { OAuthIssuer, OurClaims } from "./oauth/issuer.js";

export interface AuthOptions {
  nc: NatsConnection;
  namespace: string;
  keys: RpcClient<typeof keysRpc>;
  log: Logger;
  issuer: string;
  audience: string;
  jwksUrl?: string | undefined;
  publicKeyPem?: string | undefined;
  cacheTtlMs: number;
  /** Our own token endpoint's issuer: tokens naming it are verified with its keys, any other with the external issuer's. */
  ours: OAuthIssuer;
}

interface CacheEntry {
  identity: Identity;
  until: number;
}

const MAX_CACHE_ENTRIES = 50_000;
const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);

const missing = () => new AppError("missing_credentials", "Send a credential as Authorization: Bearer <API key or access token>.");
const badKey = () => new AppError("invalid_api_key", "The API key is not valid: it is unknown, revoked or expired.");
const badToken = (why: string) => new AppError("invalid_token", `The access token is not valid: ${why}.`);

/**
 * Identities are cached for a few seconds per replica, bounded by the credential's own expiry; the
 * keys service broadcasts an invalidation per organization on every change, and the whole cache is
 * dropped after a NATS reconnect, since an invalidation may have been missed (decision 0003).
 */
export function createAuthenticator(opts: AuthOptions) {
  const cache = new Map<string, CacheEntry>();
  const inflight = new Map<string, Promise<Identity | null>>();
  let generation = 0;
  const watchers = new Set<(orgId: string | undefined) => void>();
  const tell = (orgId: string | undefined) => {
    for (const w of watchers) w(orgId);
  };

  const dropOrg = (orgId: string) => {
    generation++;
    for (const [k, v] of cache) if (v.identity.organization_id === orgId) cache.delete(k);
    tell(orgId);
  };
  const invalidations = opts.nc.subscribe(keysInvalidationSubject(opts.namespace), {
    callback: (err, msg) => {
      if (err) return;
      const parsed = KeysInvalidation.safeParse(decodeJson(msg.data));
      if (parsed.success) dropOrg(parsed.data.organization_id);
    },
  });
  void (async () => {
    for await (const s of opts.nc.status()) {
      if (s.type === "reconnect") {
        generation++;
        cache.clear();
        // A lookup sent around the outage may never be answered (it waits out the RPC timeout): requests
        // arriving after the reconnect start their own instead of joining it.
        inflight.clear();
        tell(undefined);
      }
    }
  })();

  /** Concurrent misses for one credential share a single lookup. */
  async function cached(cacheKey: string, load: () => Promise<Identity | null>): Promise<Identity | null> {
    const hit = cache.get(cacheKey);
    const now = Date.now();
    if (hit && hit.until > now) return hit.identity;
    if (hit) cache.delete(cacheKey);
    let p = inflight.get(cacheKey);
    if (!p) {
      const startedAt = generation;
      const lookup: Promise<Identity | null> = load()
        .then((identity) => {
          // An invalidation that arrived during the lookup may concern this very answer: don't keep it.
          if (identity && opts.cacheTtlMs > 0 && startedAt === generation) {
            const expiry = identity.expires_at ? Date.parse(identity.expires_at) : Infinity;
            if (cache.size >= MAX_CACHE_ENTRIES) {
              const oldest = cache.keys().next();
              if (!oldest.done) cache.delete(oldest.value);
            }
            cache.set(cacheKey, { identity, until: Math.min(Date.now() + opts.cacheTtlMs, expiry) });
          }
          return identity;
        })
        .finally(() => {
          // Only our own entry: after a reconnect, a newer lookup may hold this key.
          if (inflight.get(cacheKey) === lookup) inflight.delete(cacheKey);
        });
      p = lookup;
      inflight.set(cacheKey, p);
    }
    return p;
  }

  const verificationKey = buildKeyGetter(opts);

  /** The identity comes from the keys service, so a deleted client, a revoked token or a departed creator stop it (decision 0043). */
  function resolveOurs(claims: OurClaims, ctx: RpcContext): Promise<Identity | null> {
    return cached(`oat:${claims.jti}`, () =>
      opts.keys.call(
        "resolveClientToken",
        {
          client_id: claims.client_id,
          organization_id: claims.org_id,
          user_id: claims.sub,
          jti: claims.jti,
          scopes: claims.scopes,
          expires_at: new Date(claims.exp * 1000).toISOString(),
        },
        ctx,
      ),
    );
  }

  function isOurs(token: string): boolean {
    try {
      return decodeJwt(token).iss === opts.ours.issuer();
    } catch {
      return false;
    }
  }

  async function verifyAccessToken(token: string, ctx: RpcContext): Promise<Identity> {
    if (isOurs(token)) {
      const identity = await resolveOurs(await opts.ours.verify(token), ctx);
      if (!identity) throw badToken("it was revoked, its client was deleted, or the member who created the client left");
      return identity;
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, await verificationKey(ctx), { issuer: opts.issuer, audience: opts.audience, requiredClaims: ["sub", "exp"] }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw badToken("it has expired");
      if (e instanceof joseErrors.JWKSTimeout || !(e instanceof joseErrors.JOSEError)) {
        // The issuer's key set could not be fetched: our problem, not the caller's token.
        throw new AppError("service_unavailable", "The access-token issuer's keys could not be fetched; retry shortly.", { cause: e, retryAfter: 1 });
      }
      throw badToken("its signature, issuer or audience does not check out");
    }
    const orgId = payload["org_id"];
    const scope = payload["scope"];
    if (typeof orgId !== "string" || typeof payload.sub !== "string" || typeof payload.exp !== "number")
      throw badToken("it lacks the sub, org_id or exp claim");
    // Unknown scope strings are ignored rather than fatal, as OAuth servers may add their own.
    const scopes = (typeof scope === "string" ? scope.split(" ") : []).filter((s): s is Scope => SCOPE_SET.has(s));
    const credentialId = `tok_${payload.jti ?? createHash("sha256").update(token).digest("hex").slice(0, 24)}`;
    const identity = await cached(`tok:${credentialId}:${payload.sub}:${orgId}`, () =>
      opts.keys.call(
        "resolveMember",
        {
          organization_id: orgId,
          user_id: payload.sub as string,
          credential_id: credentialId,
          scopes,
          expires_at: new Date((payload.exp as number) * 1000).toISOString(),
        },
        ctx,
      ),
    );
    if (!identity) throw badToken("its user is not a member of its organization");
    return identity;
  }

  return {
    /** Checked once, at the start of a request (spec 5.7). */
    async authenticate(authorization: string | undefined, ctx: RpcContext): Promise<Identity> {
      if (!authorization) throw missing();
      const m = /^Bearer[ ]+(\S+)\s*$/i.exec(authorization);
      if (!m?.[1]) throw missing();
      const token = m[1];
      if (token.startsWith("svc_")) {
        const keyHash = hashApiKey(token);
        const identity = await cached(`key:${keyHash}`, () => opts.keys.call("authenticateKey", { key_hash: keyHash }, ctx));
        if (!identity) throw badKey();
        return identity;
      }
      return verifyAccessToken(token, ctx);
    },
    /** For introspection: null for anything that would not authenticate now, or that is not one of our own tokens. */
    async inspect(token: string, ctx: RpcContext): Promise<{ claims: OurClaims; identity: Identity } | null> {
      if (!isOurs(token)) return null;
      let claims: OurClaims;
      try {
        claims = await opts.ours.verify(token);
      } catch {
        return null;
      }
      const identity = await resolveOurs(claims, ctx);
      return identity ? { claims, identity } : null;
    },
    /** What holds a credential beyond one request (a live event stream) checks it again then; undefined after a reconnect: any may have changed. */
    onChange(fn: (orgId: string | undefined) => void): () => void {
      watchers.add(fn);
      return () => watchers.delete(fn);
    },
    stop() {
      invalidations.unsubscribe();
      watchers.clear();
    },
  };
}

function buildKeyGetter(opts: AuthOptions): (ctx: RpcContext) => Promise<JWTVerifyGetKey> {
  if (opts.jwksUrl) {
    const remote = createRemoteJWKSet(new URL(opts.jwksUrl));
    return async () => remote;
  }
  if (opts.publicKeyPem) {
    const pem = opts.publicKeyPem;
    const byAlg = new Map<string, ReturnType<typeof importSPKI>>();
    const getter: JWTVerifyGetKey = (header) => {
      const alg = header.alg;
      let k = byAlg.get(alg);
      if (!k) {
        k = importSPKI(pem, alg);
        byAlg.set(alg, k);
      }
      return k;
    };
    return async () => getter;
  }
  // Whoever can sign as the development issuer can act as any member of any organization here.
  opts.log.warn(
    "OAUTH_JWKS_URL is not set: access tokens signed by the development issuer (admin issue-token) are accepted; set OAUTH_JWKS_URL (your OAuth issuer's JWKS) or OAUTH_PUBLIC_KEY outside development",
  );
  let dev: { at: number; getter: JWTVerifyGetKey } | undefined;
  return async (ctx) => {
    // Refreshed every five minutes so that a re-keyed development issuer is picked up.
    if (!dev || Date.now() - dev.at > 300_000) {
      const jwks = await opts.keys.call("devJwks", {}, ctx);
      dev = { at: Date.now(), getter: createLocalJWKSet({ keys: jwks.keys as never }) };
    }
    return dev.getter;
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
