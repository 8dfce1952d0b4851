import cors from "@fastify/cors";
import type { FastifyInstance } from "fastify";

/**
 * What CORS lets a browser page on an allowed origin do (decision 0019). The methods the routes
 * serve: a route with another one fails the build (checkCorsMethods), so that a preflight never
 * refuses a method the API serves.
 */
export const CORS_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/** The request headers the API reads beyond those browsers send freely. */
export const CORS_REQUEST_HEADERS: readonly string[] = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "If-Match",
  "If-None-Match",
  "traceparent",
  "tracestate",
];
/** The API's own response headers, which a page's script may read only when they are listed. */
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
/** How long a browser may reuse a preflight's answer: a changed CORS_ORIGINS is seen within it. */
const CORS_MAX_AGE_SECONDS = 600;

/** Refuses, when it is added, a route whose method CORS_METHODS does not list. */
export function checkCorsMethods(app: FastifyInstance): void {
  app.addHook("onRoute", (route) => {
    for (const method of [route.method].flat()) {
      // OPTIONS is the CORS plugin's own preflight route.
      if (method !== "OPTIONS" && !CORS_METHODS.includes(method)) throw new Error(`${method} ${route.url}: add ${method} to CORS_METHODS (http/cors.ts)`);
    }
  });
}

/** CORS_ORIGINS: the browser origins allowed to call the API, `*` for any. */
export function registerCors(app: FastifyInstance, origins: "*" | readonly string[]): void {
  // Its onRequest hook runs after the request id and the edge checks, and answers a preflight
  // there: no route's pipeline runs for it, so it is never authenticated or charged.
  app.register(cors, {
    origin: origins === "*" ? "*" : [...origins],
    methods: [...CORS_METHODS],
    allowedHeaders: [...CORS_REQUEST_HEADERS],
    exposedHeaders: [...CORS_EXPOSED_HEADERS],
    // Credentials are bearer tokens the page sends itself, never cookies: nothing to allow.
    credentials: false,
    maxAge: CORS_MAX_AGE_SECONDS,
    // Every OPTIONS is answered as a preflight: the strict mode would answer one that lacks
    // Origin or Access-Control-Request-Method with a text/plain 400 rather than a problem.
    strictPreflight: false,
  });
}
