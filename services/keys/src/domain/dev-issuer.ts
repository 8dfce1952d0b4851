import { SignJWT, exportJWK, generateKeyPair, importJWK, type JWK } from "jose";
import type { KeysRepo } from "../repo/keys-repo.js";

const ALG = "ES256";
const KID = "dev-1";

export interface DevIssuer {
  issuer: string;
  publicJwks(): Promise<JWK[]>;
  sign(claims: { sub: string; org_id: string; scope: string; jti: string }, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }>;
}

/**
 * The development OAuth issuer behind `admin issue-token`. Its key pair lives in the keys schema so
 * every replica signs with the same key and the gateway can fetch the public half over NATS.
 * Production deployments point the gateway at a real issuer with OAUTH_JWKS_URL instead.
 */
export function devIssuer(repo: KeysRepo, issuer: string, audience: string): DevIssuer {
  let cached: Promise<{ privateJwk: JWK; publicJwk: JWK }> | undefined;
  const load = () =>
    (cached ??= (async () => {
      let row = await repo.signingKey();
      if (!row) {
        const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
        const pub = { ...(await exportJWK(publicKey)), kid: KID, alg: ALG, use: "sig" };
        const priv = { ...(await exportJWK(privateKey)), kid: KID, alg: ALG };
        await repo.insertSigningKey(KID, priv, pub);
        row = await repo.signingKey();
        if (!row) throw new Error("signing key vanished after insert");
      }
      return { privateJwk: row.private_jwk as JWK, publicJwk: row.public_jwk as JWK };
    })().catch((e: unknown) => {
      cached = undefined;
      throw e;
    }));

  return {
    issuer,
    async publicJwks() {
      return [(await load()).publicJwk];
    },
    async sign(claims, ttlSeconds) {
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
  };
}
