import { databaseErrorAsAppError } from "@tasksvc/db";
import { AppError, isAppError, toProblem } from "@tasksvc/errors";
import { gatewayRefusals } from "@tasksvc/telemetry";
import type { FastifyBaseLogger, FastifyError, FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from "fastify";
import { countIdempotencyRefusal } from "../pipeline/idempotency.js";
import { emptyPathParameter, EVERY_ANSWER_HEADERS, loggedUrl } from "./requests.js";

function fromFastify(e: FastifyError): AppError | undefined {
  switch (e.code) {
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new AppError("validation_failed", `The request body is not valid JSON: ${e.message}`, {
        errors: [{ pointer: "/", message: "is not valid JSON" }],
      });
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return new AppError("validation_failed", "The request body is empty but Content-Type says application/json.", {
        errors: [{ pointer: "/", message: "is empty" }],
      });
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new AppError("unsupported_media_type", "Request bodies must be JSON: send Content-Type: application/json.");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new AppError("payload_too_large", "The request body is larger than this API accepts.");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new AppError("validation_failed", "The Content-Length header does not match the body.");
    case "FST_ERR_BAD_URL":
      return new AppError("malformed_request", "The URL path is not valid percent-encoded UTF-8 (or not a path).");
    case "FST_ERR_MAX_PARAM_LENGTH":
      // Unreachable: the router's limit is the header limit (MAX_PARAM_LENGTH, requests.ts). A guard.
      return new AppError("validation_failed", "A path parameter is longer than any id.");
    default:
      return e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500 ? new AppError("validation_failed", e.message) : undefined;
  }
}

declare module "fastify" {
  interface FastifyInstance {
    /** Never taken from a request (buildGateway). */
    readonly publicBaseUrl: string;
  }
}

const POLICY_REFUSALS = new Set(["rate_limited", "quota_exhausted"]);

export function sendProblem(reply: FastifyReply, err: AppError): FastifyReply {
  countRefusal(err);
  if (err.retryAfter !== undefined) reply.header("retry-after", String(err.retryAfter));
  if (err.etag !== undefined) reply.header("etag", err.etag);
  if (err.status === 401) reply.header("www-authenticate", 'Bearer realm="tasksvc"');
  return reply
    .code(err.status)
    .type("application/problem+json")
    .send(toProblem(err, String(reply.request.id), reply.server.publicBaseUrl));
}

/** The problem an error is answered with: unexpected errors are logged once, here, with their stack; 4xx are not logged as errors. */
export function problemOf(e: unknown, log: Pick<FastifyBaseLogger, "warn" | "error">): AppError {
  // The gateway's own database restarting is a 503 to retry.
  const fromFramework = typeof e === "object" && e !== null ? fromFastify(e as FastifyError) : undefined;
  const known = isAppError(e) ? e : (fromFramework ?? databaseErrorAsAppError(e));
  if (known && known.status < 500) return known;
  if (known?.code === "service_unavailable") {
    log.warn({ err: known.cause ?? known }, known.message);
    return known;
  }
  log.error({ err: known?.cause ?? e }, "unexpected error");
  return known ?? new AppError("internal_error", "An unexpected error occurred. Quote the request id when contacting support.");
}

/** The metrics of a refusal, counted wherever it is answered. */
export function countRefusal(err: AppError): void {
  if (POLICY_REFUSALS.has(err.code)) gatewayRefusals.inc({ code: err.code });
  else countIdempotencyRefusal(err.code);
}

function handleError(e: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(reply, problemOf(e, req.log));
}

/** The router's refusals otherwise answer bare JSON; no hook has run, so the request id header and the access line are written here. */
export function frameworkErrors(e: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  reply.header("x-request-id", req.id).headers(EVERY_ANSWER_HEADERS);
  handleError(e, req, reply);
  req.log.info({ method: req.method, url: loggedUrl(req), status: reply.statusCode }, "request");
}

const METHOD_ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
const rank = (m: string) => (METHOD_ORDER.includes(m) ? METHOD_ORDER.indexOf(m) : METHOD_ORDER.length);

/** A catch-all route (the CORS plugin's OPTIONS `*`) adds its method to a known path's list but makes no path known. */
export function allowedMethods(app: FastifyInstance, path: string): string[] {
  let known = false;
  const allowed: string[] = [];
  for (const method of app.supportedMethods) {
    const found = app.findRoute({ method: method as HTTPMethods, url: path });
    // A match with an empty parameter (`/v1/tasks/` on `/v1/tasks/:task_id`) is no route.
    if (!found || emptyPathParameter(found) !== undefined) continue;
    allowed.push(method);
    if (!("*" in found.params)) known = true;
  }
  return known ? allowed.sort((a, b) => rank(a) - rank(b)) : [];
}

/** Answered before any authentication: the route table is public (the OpenAPI document), so a 405 tells an anonymous caller nothing new. */
function notFound(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const path = req.url.split("?")[0] ?? "";
  const allowed = allowedMethods(req.server, path);
  if (allowed.length === 0) return sendProblem(reply, new AppError("route_not_found", `No route ${req.method} ${path}.`));
  reply.header("allow", allowed.join(", "));
  return sendProblem(reply, new AppError("method_not_allowed", `${req.method} is not served at ${path}; it serves ${allowed.join(", ")}.`));
}

export function registerProblemHandling(app: FastifyInstance): void {
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFound);
}
