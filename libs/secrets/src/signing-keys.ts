import { z } from "zod";

/**
 * DEVELOPMENT ONLY, so `make run` can issue OAuth tokens out of the box: it is public, so anyone can
 * sign tokens our gateway accepts with it, and a gateway using it warns at start.
 */
export const DEV_OAUTH_SIGNING_KEY = {
  kid: "dev-oauth-1",
  kty: "EC",
  crv: "P-256",
  x: "S4tTDNrpJvr3yf0_xIWcZ27VOSUdW34qB-IEB4oBOlA",
  y: "UM4WwJ5bn5fT0nT8_6sqCbWDz47oe5AtZVarLyBrP-Q",
  d: "g3KgdBFBbzWxYuYy4gc-44OsUU4jWH_rfnCwERIJ9Vw",
} as const;

export type SigningAlg = "ES256" | "ES384" | "EdDSA" | "RS256";

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  /** The private JWK as configured (with `d`). */
  jwk: Record<string, string>;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

/** The algorithm follows from the key: one per key type, so a token header cannot pick a weaker one. */
function algOf(jwk: Record<string, unknown>): SigningAlg | string {
  if (jwk["kty"] === "EC" && jwk["crv"] === "P-256") return "ES256";
  if (jwk["kty"] === "EC" && jwk["crv"] === "P-384") return "ES384";
  if (jwk["kty"] === "OKP" && jwk["crv"] === "Ed25519") return "EdDSA";
  if (jwk["kty"] === "RSA") return "RS256";
  return `an unsupported key type (${String(jwk["kty"])} ${String(jwk["crv"] ?? "")}): use EC P-256 or P-384, OKP Ed25519, or RSA`;
}

const REQUIRED: Record<SigningAlg, readonly string[]> = {
  ES256: ["x", "y", "d"],
  ES384: ["x", "y", "d"],
  EdDSA: ["x", "d"],
  RS256: ["n", "e", "d", "p", "q", "dp", "dq", "qi"],
};

/** Checks what can be checked without importing the keys (the gateway imports them at start and stops on a bad one). */
export function parseSigningKeys(text: string): SigningKey[] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return "expected a JSON array of private JWKs, each with a `kid` (the first signs, all verify)";
  }
  if (!Array.isArray(parsed) || parsed.length === 0) return "expected a non-empty JSON array of private JWKs (the first signs, all verify)";
  if (parsed.length > 10) return "at most 10 keys (one signing, the others kept to verify during a rotation)";
  const out: SigningKey[] = [];
  for (const [i, entry] of parsed.entries()) {
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return `entry ${i} is not a JWK object`;
    const jwk = entry as Record<string, unknown>;
    const kid = jwk["kid"];
    if (typeof kid !== "string" || !/^[A-Za-z0-9._-]{1,64}$/.test(kid)) return `entry ${i} needs a \`kid\` of 1-64 letters, digits, ".", "_" or "-"`;
    if (out.some((k) => k.kid === kid)) return `the kid "${kid}" appears twice: every key needs its own`;
    const alg = algOf(jwk);
    if (!(alg in REQUIRED)) return `key "${kid}" is ${alg}`;
    const a = alg as SigningAlg;
    if (jwk["alg"] !== undefined && jwk["alg"] !== a) return `key "${kid}" says alg ${String(jwk["alg"])}, but its key type signs ${a}`;
    for (const member of REQUIRED[a]) {
      const v = jwk[member];
      if (typeof v !== "string" || !B64URL.test(v))
        return `key "${kid}" lacks the member "${member}"${member === "d" ? " (a private key is needed: the first one signs)" : ""}`;
    }
    const fields: Record<string, string> = {};
    for (const [k, v] of Object.entries(jwk)) if (typeof v === "string") fields[k] = v;
    out.push({ kid, alg: a, jwk: fields });
  }
  return out;
}

/** Unset falls back to the development key with `isDevKey: true`, so the process can warn. */
export const signingKeysSetting = z
  .string()
  .optional()
  .transform((value, ctx): { keys: SigningKey[]; isDevKey: boolean } => {
    if (value === undefined) return { keys: [{ kid: DEV_OAUTH_SIGNING_KEY.kid, alg: "ES256", jwk: { ...DEV_OAUTH_SIGNING_KEY } }], isDevKey: true };
    const keys = parseSigningKeys(value);
    if (typeof keys === "string") {
      ctx.addIssue({ code: "custom", message: keys });
      return z.NEVER;
    }
    return { keys, isDevKey: keys.some((k) => k.jwk["d"] === DEV_OAUTH_SIGNING_KEY.d) };
  });
