import { AppError } from "@tasksvc/errors";
import { httpEdgeRefused } from "@tasksvc/telemetry";
import type { FastifyInstance } from "fastify";
import { type LinkRate, linkLimiter } from "./link-limits.js";
import { emptyPathParameter } from "./requests.js";

const ANON_LIMIT_CLIENTS = 50_000;

/** Also counts requests whose credential is refused (the pipeline counts those through the function returned). */
export function limitAnonymous(app: FastifyInstance, rate: LinkRate | null | undefined): ((ip: string) => number) | undefined {
  if (!rate) return undefined;
  const limiter = linkLimiter(rate, { maxClients: ANON_LIMIT_CLIENTS });
  // The routes that need no credential cost their caller nothing, so they are counted per client
  // address instead, before any work; the operations are charged per credential.
  // A callback hook: no promise per request for a step that never waits.
  app.addHook("onRequest", (req, _reply, done) => {
    const routed = req.routeOptions.config?.operation || req.routeOptions.config?.credentialed || req.routeOptions.url?.includes("/:capability");
    // A path with an empty parameter names no route: counted like any unknown path.
    if (routed && emptyPathParameter(req) === undefined) return done();
    const wait = limiter.take(req.ip);
    if (wait <= 0) return done();
    httpEdgeRefused.labels({ reason: "anonymous_rate" }).inc();
    done(
      new AppError(
        "rate_limited",
        `Too many requests without a credential from this address (at most ${rate.limit} per ${rate.windowMs / 1000} s); retry after the Retry-After delay.`,
        { retryAfter: wait },
      ),
    );
  });
  return (ip) => limiter.take(ip);
}
