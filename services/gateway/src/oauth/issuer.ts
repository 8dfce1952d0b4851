import { OAUTH_TOKEN_TTL_SECONDS, SCOPES, type Scope } from "@tasksvc/contracts";
import { StartupError } from "@tasksvc/config";
import { AppError } from "@tasksvc/errors";
import { newId, type SigningKey } from "@tasksvc/secrets";
import { createLocalJWKSet, errors as joseErrors, exportJWK, importJWK, type JWK, jwtVerify, SignJWT } from "jose";

/** What our own access tokens carry (RFC 9068), checked on every use. */
export interface OurClaims {
  iss: string;
  sub: string;
  org_id: string;
  client_id: string;
  jti: string;
  scopes: Scope[];
  iat: number;
  exp: number;
}

export interface OAuthIssuer {
  /** The `iss` of our tokens, as the metadata document names it. */
  issuer(): string;
  audience: string;
  /** The public halves of every configured key, the signing one first. */
  jwks: { keys: JWK[] };
  sign(c: { sub: string; org_id: string; client_id: string; scopes: readonly Scope[] }): Promise<{ token: string; expiresIn: number }>;
  /** Throws invalid_token naming why. */
  verify(token: string): Promise<OurClaims>;
}

const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);
const badToken = (why: string) => new AppError("invalid_token", `The access token is not valid: ${why}.`);

/** Every key is imported at start: a key that does not import stops the process, never the first token request. */
export async function createOAuthIssuer(o: { keys: readonly SigningKey[]; issuer: () => string; audience: string }): Promise<OAuthIssuer> {
  const imported = await Promise.all(
    o.keys.map(async (k) => {
      try {
        const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = k.jwk;
        const privateKey = await importJWK({ ...k.jwk, alg: k.alg }, k.alg);
        const publicJwk: JWK = { ...(await exportJWK(await importJWK({ ...pub, alg: k.alg }, k.alg))), kid: k.kid, alg: k.alg, use: "sig" };
        return { ...k, privateKey, publicJwk };
      } catch (e) {
        throw new StartupError(
          `OAUTH_SIGNING_KEYS: key "${k.kid}" could not be imported as a ${k.alg} private key (${e instanceof Error ? e.message : String(e)})`,
        );
      }
    }),
  );
  const signer = imported[0];
  if (!signer) throw new StartupError("OAUTH_SIGNING_KEYS: no key to sign with");
  const jwks = { keys: imported.map((k) => k.publicJwk) };
  const keySet = createLocalJWKSet(jwks);
  const algorithms = [...new Set(imported.map((k) => k.alg))];

  return {
    issuer: o.issuer,
    audience: o.audience,
    jwks,
    async sign(c) {
      const now = Math.floor(Date.now() / 1000);
      const token = await new SignJWT({ org_id: c.org_id, scope: c.scopes.join(" "), client_id: c.client_id })
        .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: "at+jwt" })
        .setIssuer(o.issuer())
        .setAudience(o.audience)
        .setSubject(c.sub)
        .setJti(newId("oat"))
        .setIssuedAt(now)
        .setExpirationTime(now + OAUTH_TOKEN_TTL_SECONDS)
        .sign(signer.privateKey);
      return { token, expiresIn: OAUTH_TOKEN_TTL_SECONDS };
    },
    async verify(token) {
      let payload: Record<string, unknown>;
      try {
        ({ payload } = await jwtVerify(token, keySet, {
          issuer: o.issuer(),
          audience: o.audience,
          typ: "at+jwt",
          algorithms,
          requiredClaims: ["sub", "exp", "iat", "jti"],
        }));
      } catch (e) {
        if (e instanceof joseErrors.JWTExpired) throw badToken("it has expired");
        throw badToken("its signature, type or audience does not check out (or its signing key was retired)");
      }
      const { sub, exp, iat, jti, org_id, client_id, scope } = payload;
      if (
        typeof sub !== "string" ||
        typeof exp !== "number" ||
        typeof iat !== "number" ||
        typeof jti !== "string" ||
        typeof org_id !== "string" ||
        typeof client_id !== "string" ||
        typeof scope !== "string"
      )
        throw badToken("it lacks one of the claims sub, org_id, client_id, scope, jti, iat, exp");
      const scopes = scope.split(" ").filter((s): s is Scope => SCOPE_SET.has(s));
      return { iss: o.issuer(), sub, org_id, client_id, jti, scopes, iat, exp };
    },
  };
}
