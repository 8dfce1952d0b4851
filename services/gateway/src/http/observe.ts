import {
  context,
  currentTraceparent,
  extractContext,
  httpRequestDuration,
  httpRequestsInFlight,
  seriesCache,
  SpanKind,
  SpanStatusCode,
  trace,
  tracer,
  tracingEnabled,
  type Span,
} from "@tasksvc/telemetry";
import type { Logger } from "@tasksvc/logger";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";
import { EVERY_ANSWER_HEADERS, loggedUrl } from "./requests.js";

declare module "fastify" {
  interface FastifyRequest {
    span?: Span;
  }
}

const firstHeader = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v[0] : v);

const httpSeries = seriesCache(httpRequestDuration);

/** Fastify types its logger without pino's level check; one without it is taken to log everything. */
const infoEnabled = (log: FastifyBaseLogger): boolean => (log as Partial<Pick<Logger, "isLevelEnabled">>).isLevelEnabled?.("info") ?? true;

export function observeRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id).headers(EVERY_ANSWER_HEADERS);
    httpRequestsInFlight.inc();
    // "close" comes for every response, finished or aborted (onResponse misses aborted ones).
    reply.raw.once("close", () => httpRequestsInFlight.dec());
    if (!tracingEnabled()) return done();
    // Every hook, handler and RPC after this one runs inside the span (AsyncLocalStorage follows `done`'s continuation).
    const parent = extractContext({ get: (k) => firstHeader(req.headers[k]), set: () => undefined });
    const span = tracer().startSpan(
      `${req.method} ${req.routeOptions.url ?? "unmatched"}`,
      {
        kind: SpanKind.SERVER,
        attributes: { "http.request.method": req.method, "http.route": req.routeOptions.url ?? "unmatched", "tasksvc.request_id": req.id },
      },
      parent,
    );
    req.span = span;
    const active = trace.setSpan(parent, span);
    const traceparent = currentTraceparent(active);
    if (traceparent) reply.header("traceparent", traceparent);
    context.with(active, done);
  });
  // A callback hook: no promise per request for a step that never waits.
  app.addHook("onResponse", (req, reply, done) => {
    const route = req.routeOptions.url ?? "unmatched";
    const status = reply.statusCode;
    httpSeries(`${req.method} ${route} ${status}`, { method: req.method, route, status_code: String(status) }).observe(reply.elapsedTime / 1000);
    if (req.span) {
      req.span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) req.span.setStatus({ code: SpanStatusCode.ERROR });
      req.span.end();
    }
    // The line's fields (its URL decoded and checked for a link) are built only when it is written.
    if (infoEnabled(req.log)) {
      const org = req.pipeline?.identity.organization_id;
      req.log.info(
        { method: req.method, url: loggedUrl(req), status: reply.statusCode, ms: Math.round(reply.elapsedTime), ...(org ? { organization_id: org } : {}) },
        "request",
      );
    }
    done();
  });
}
