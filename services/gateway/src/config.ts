import { blobStoreSetting } from "@tasksvc/blobs";
import { serviceSettings, settings } from "@tasksvc/config";
import { z } from "zod";

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
  /** How clients reach the gateway: the base of the upload and download links it hands out. */
  PUBLIC_BASE_URL: settings.PUBLIC_BASE_URL,
  /** Where attachment bytes live; with `nats` they stream through this gateway (decision 0016). */
  BLOB_STORE: blobStoreSetting,
  /** Largest accepted request body; larger ones answer 413 payload_too_large. */
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
});
export type GatewayConfig = z.output<typeof GatewayConfig>;
