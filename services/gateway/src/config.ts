import { blobStoreSetting } from "@tasksvc/blobs";
import { duration, serviceSettings, settings } from "@tasksvc/config";
import { z } from "zod";
import { linkRateLimitSetting, trustProxySetting } from "./http/link-limits.js";

/**
 * CORS_ORIGINS: unset, no CORS headers at all; `*`, any origin; or a comma-separated list of
 * origins, each written as browsers send it in `Origin` (scheme, host, port if not the default;
 * no path, no trailing slash), since an origin is compared as text and a near miss would quietly
 * refuse every request from that page.
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

/** The origin a URL names, when it is an http(s) URL; `null` (opaque) origins are never allowed. */
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
  /**
   * How clients reach the gateway: the base of the upload and download links it hands out, of a
   * problem's `type` and of the document's `servers`; unset, http://localhost:PORT. Kept without
   * a trailing slash, since paths are appended to it.
   */
  PUBLIC_BASE_URL: settings.PUBLIC_BASE_URL.transform((v) => v?.replace(/\/+$/, "")),
  /** Where attachment bytes live; with `nats` they stream through this gateway (decision 0016). */
  BLOB_STORE: blobStoreSetting,
  /** Largest accepted request body; larger ones answer 413 payload_too_large. */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  /** The browser origins allowed to call the API (decision 0019). */
  CORS_ORIGINS: corsOriginsSetting,
  /** Requests per window and client address on the anonymous upload and download link routes. */
  LINK_RATE_LIMIT: linkRateLimitSetting,
  /** The proxies whose X-Forwarded-For names a client's address (the link routes' limit counts by it). */
  TRUST_PROXY: trustProxySetting,
  /**
   * How long a request may take to arrive whole, from its first byte to its body's last: past it,
   * 408 request_timeout and the connection is closed, so a client that trickles a body cannot
   * hold a connection and its buffer for ever.
   */
  BODY_TIMEOUT: duration("30s").refine((ms) => ms >= 1000 && ms <= 3_600_000, "expected a duration between 1s and 1h"),
  /** Requests per window and client address on the routes that need no credential (docs, OpenAPI, health). */
  ANON_RATE_LIMIT: linkRateLimitSetting,
});
export type GatewayConfig = z.output<typeof GatewayConfig>;
