import { blobStoreSetting } from "@tasksvc/blobs";
import { duration, serviceSettings, settings } from "@tasksvc/config";
import { signingKeysSetting } from "@tasksvc/secrets";
import { z } from "zod";
import { linkRateLimitSetting, rateLimitSetting, trustProxySetting } from "./http/link-limits.js";

/**
 * Each origin written as browsers send it in `Origin` (scheme, host, port if not the default; no
 * path, no trailing slash): an origin is compared as text, and a near miss would quietly refuse
 * every request from that page.
 */
export const corsOriginsSetting = z
  .string()
  .optional()
  .transform((value, ctx): "*" | string[] | undefined => {
    if (value === undefined) return undefined;
    const entries = value.split(",").map((e) => e.trim());
    if (entries.length === 1 && entries[0] === "*") return "*";
    const problems: string[] = [];
    for (const entry of entries) {
      if (entry === "*") problems.push("`*` allows every origin and stands alone");
      else if (entry === "") problems.push("an empty entry");
      else {
        const origin = originOf(entry);
        if (origin === undefined) problems.push(`"${entry}" is not an http(s) origin such as https://app.example.com`);
        else if (origin !== entry) problems.push(`write "${entry}" as ${origin}, as browsers send it`);
      }
    }
    if (problems.length > 0) {
      ctx.addIssue({ code: "custom", message: `expected \`*\` or a comma-separated list of origins (${problems.join("; ")})` });
      return z.NEVER;
    }
    return entries;
  });

/** `null` (opaque) origins are never allowed. */
function originOf(text: string): string | undefined {
  try {
    const u = new URL(text);
    return u.protocol === "http:" || u.protocol === "https:" ? u.origin : undefined;
  } catch {
    return undefined;
  }
}

export const GatewayConfig = z.object({
  ...serviceSettings,
  PORT: settings.PORT,
  OAUTH_ISSUER: settings.OAUTH_ISSUER,
  OAUTH_AUDIENCE: settings.OAUTH_AUDIENCE,
  OAUTH_JWKS_URL: settings.OAUTH_JWKS_URL,
  OAUTH_PUBLIC_KEY: settings.OAUTH_PUBLIC_KEY,
  RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS,
  AUTH_CACHE_TTL_MS: settings.AUTH_CACHE_TTL_MS,
  RPC_CHECK_REPLIES: settings.RPC_CHECK_REPLIES,
  /** Kept without a trailing slash, since paths are appended to it. */
  PUBLIC_BASE_URL: settings.PUBLIC_BASE_URL.transform((v) => v?.replace(/\/+$/, "")),
  /** With `nats`, attachment bytes stream through this gateway (decision 0016). */
  BLOB_STORE: blobStoreSetting,
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** Decision 0019. */
  CORS_ORIGINS: corsOriginsSetting,
  LINK_RATE_LIMIT: linkRateLimitSetting,
  TRUST_PROXY: trustProxySetting,
  /** So that a client that trickles a body cannot hold a connection and its buffer for ever. */
  BODY_TIMEOUT: duration("30s").refine((ms) => ms >= 1000 && ms <= 3_600_000, "expected a duration between 1s and 1h"),
  ANON_RATE_LIMIT: linkRateLimitSetting,
  /** Accepting an invitation takes no credential: per client address, far below the other anonymous routes. */
  INVITATION_ACCEPT_RATE_LIMIT: rateLimitSetting("10/1m"),
  /** The keys that sign our own OAuth clients' tokens, the signing one first (decision 0043). */
  OAUTH_SIGNING_KEYS: signingKeysSetting,
  /** The `iss` of those tokens; unset: PUBLIC_BASE_URL (else this gateway's own address). Never OAUTH_ISSUER's. */
  OAUTH_TOKEN_ISSUER: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .transform((v) => v?.replace(/\/+$/, "")),
});
export type GatewayConfig = z.output<typeof GatewayConfig>;
