import { AppError } from "@tasksvc/errors";
import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import type { KeysResources } from "./resources.js";

const ALG = "ES256";
const KID = "dev-1";

export interface DevIssuer {
  issuer: string;
  enabled: boolean;
  /** None when off. */
  publicJwks(): Promise<JWK[]>;
  sign(claims: { sub: string; org_id: string; scope: string; jti: string }, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }>;
  sealStoredKeys(): Promise<number>;
}

export interface DevIssuerOptions {
  issuer: string;
  audience: string;
  enabled: boolean;
}

/**
 * The key pair lives in the keys schema, the private half sealed under KEYS_SECRET_KEY, so every
 * replica signs with the same key and a copy of the database cannot sign.
 */
export function devIssuer(res: KeysResources, opts: DevIssuerOptions): DevIssuer {
  const { repo, box, log } = res;
  const { issuer, audience } = opts;
  let cached: Promise<{ privateJwk: JWK; publicJwk: JWK }> | undefined;

  async function newPair(): Promise<{ sealed: string; publicJwk: JWK }> {
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const publicJwk = { ...(await exportJWK(publicKey)), kid: KID, alg: ALG, use: "sig" };
    const privateJwk = { ...(await exportJWK(privateKey)), kid: KID, alg: ALG };
    return { sealed: box.seal(JSON.stringify(privateJwk)), publicJwk };
  }

  async function read(): Promise<{ privateJwk: JWK; publicJwk: JWK }> {
    // A replica racing us may win the insert or the replace, which the next read sees: three passes cover both races.
    for (let pass = 0; pass < 3; pass++) {
      const row = await repo.signingKey();
      if (!row) {
        const { sealed, publicJwk } = await newPair();
        await repo.insertSigningKey(KID, sealed, publicJwk);
        continue;
      }
      const publicJwk = row.public_jwk as JWK;
      if (row.private_jwk) {
        // Stored plain by an older release (one may still run during a rollout): usable, and sealed now.
        await repo.sealSigningKey(row.kid, box.seal(JSON.stringify(row.private_jwk)));
        return { privateJwk: row.private_jwk as JWK, publicJwk };
      }
      const sealed = row.private_key_sealed as string;
      try {
        return { privateJwk: JSON.parse(box.open(sealed)) as JWK, publicJwk };
      } catch (err) {
        // Sealed under another KEYS_SECRET_KEY: the key is lost to us either way, and a new pair keeps `admin issue-token` working.
        log.warn(
          { err },
          "the development issuer's signing key was sealed under another KEYS_SECRET_KEY: replaced by a new key pair; tokens it signed before are refused once gateways refresh its key (within five minutes)",
        );
        const fresh = await newPair();
        await repo.replaceSigningKey(row.kid, sealed, fresh.sealed, fresh.publicJwk);
      }
    }
    throw new Error("the development issuer's signing key could not be stored");
  }

  const load = () =>
    (cached ??= read().catch((e: unknown) => {
      cached = undefined;
      throw e;
    }));

  return {
    issuer,
    enabled: opts.enabled,
    async publicJwks() {
      return opts.enabled ? [(await load()).publicJwk] : [];
    },
    async sign(claims, ttlSeconds) {
      if (!opts.enabled)
        throw new AppError(
          "feature_not_enabled",
          "The development token issuer is off: this deployment checks access tokens against its OAuth issuer (OAUTH_JWKS_URL or OAUTH_PUBLIC_KEY), so get tokens from that issuer.",
        );
      const { privateJwk } = await load();
      const key = await importJWK(privateJwk, ALG);
      const now = Math.floor(Date.now() / 1000);
      const exp = now + ttlSeconds;
      const token = await new SignJWT({ org_id: claims.org_id, scope: claims.scope })
        .setProtectedHeader({ alg: ALG, kid: KID, typ: "at+jwt" })
        .setIssuer(issuer)
        .setAudience(audience)
        .setSubject(claims.sub)
        .setJti(claims.jti)
        .setIssuedAt(now)
        .setExpirationTime(exp)
        .sign(key);
      return { token, expiresAt: new Date(exp * 1000) };
    },
    async sealStoredKeys() {
      let sealed = 0;
      for (const row of await repo.plainSigningKeys()) {
        if (await repo.sealSigningKey(row.kid, box.seal(JSON.stringify(row.private_jwk)))) sealed++;
      }
      return sealed;
    },
  };
}
