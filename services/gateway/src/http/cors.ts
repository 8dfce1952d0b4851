import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";

/** A route with another method fails the build (checkCorsMethods), so a preflight never refuses a method the API serves. */
export const CORS_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
export const CORS_REQUEST_HEADERS: readonly string[] = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "traceparent",
  "tracestate",
  // A browser-based MCP client (an inspector) sends it on every message after initialize.
  "MCP-Protocol-Version",
];
/** A page's script may read only the response headers listed. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  "x-request-id",
  "RateLimit",
  "RateLimit-Policy",
  "X-RateLimit-Limit",
  "X-RateLimit-Remaining",
  "X-RateLimit-Reset",
  "Retry-After",
  "Idempotency-Replayed",
  "ETag",
  "Location",
  "traceparent",
  "Allow",
  "WWW-Authenticate",
  "Content-Disposition",
];
/** A changed CORS_ORIGINS is seen within it. */
const CORS_MAX_AGE_SECONDS = 600;

export function checkCorsMethods(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      // OPTIONS is the CORS plugin's own preflight route.
      if (method !== "OPTIONS" && !CORS_METHODS.includes(method)) throw new Error(`${method} ${route.url}: add ${method} to CORS_METHODS (http/cors.ts)`);
    }
  });
}

export function registerCors(app: FastifyInstance, origins: "*" | readonly string[]): void {
  // Preflights are answered in its onRequest hook, so no route's pipeline runs: never authenticated or charged.
  app.register(cors, {
    origin: origins === "*" ? "*" : [...origins],
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_REQUEST_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    // Credentials are bearer tokens the page sends itself, never cookies: nothing to allow.
    credentials: false,
    maxAge: CORS_MAX_AGE_SECONDS,
    // The strict mode would answer a preflight that lacks Origin or Access-Control-Request-Method with a text/plain 400, not a problem.
    strictPreflight: false,
  });
}
