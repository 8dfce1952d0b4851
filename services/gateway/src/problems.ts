import { gatewayRefusals, idempotencyOutcomes } from "@tasksvc/telemetry";
import { databaseErrorAsAppError } from "@tasksvc/db";
import { AppError, isAppError, toProblem } from "@tasksvc/errors";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Fastify's own failures (parsing, size, routing) as catalog errors. */
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
      // Unreachable: the router's limit is the header limit (MAX_PARAM_LENGTH, edge.ts). A guard.
      return new AppError("validation_failed", "A path parameter is longer than any id.");
    default:
      return e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500 ? new AppError("validation_failed", e.message) : undefined;
  }
}

declare module "fastify" {
  interface FastifyInstance {
    /** PUBLIC_BASE_URL, when set: the origin problem types and links are built on. */
    publicBaseUrl: string | null;
  }
}

/**
 * How this request's client reaches the gateway: PUBLIC_BASE_URL, else the origin the request
 * came to. The base of the links the gateway hands out, and of a problem's `type`, so that it is a
 * URL the client can follow (`…/docs/errors#code`).
 */
export function requestOrigin(req: FastifyRequest): string {
  if (req.server.publicBaseUrl) return req.server.publicBaseUrl;
  // A request with no Host header (HTTP/1.0) names no origin: the type stays a relative reference.
  return req.host ? `${req.protocol}://${req.host}` : "";
}

/** Refusals counted as metrics (by code): the gateway's policies, and Idempotency-Key clashes. */
const POLICY_REFUSALS = new Set(["rate_limited", "quota_exhausted"]);
const IDEMPOTENCY_REFUSALS: Record<string, string> = { idempotency_key_reused: "conflict", idempotency_in_progress: "in_progress" };

export function sendProblem(reply: FastifyReply, err: AppError): FastifyReply {
  if (POLICY_REFUSALS.has(err.code)) gatewayRefusals.inc({ code: err.code });
  else {
    const outcome = IDEMPOTENCY_REFUSALS[err.code];
    if (outcome) idempotencyOutcomes.inc({ outcome });
  }
  if (err.retryAfter !== undefined) reply.header("retry-after", String(err.retryAfter));
  if (err.status === 401) reply.header("www-authenticate", 'Bearer realm="tasksvc"');
  return reply
    .code(err.status)
    .type("application/problem+json")
    .send(toProblem(err, String(reply.request.id), requestOrigin(reply.request)));
}

/**
 * Every error leaves as application/problem+json. Unexpected errors are logged once, here, with
 * their stack, and answer a bare 500 internal_error carrying request_id; 4xx are not logged as errors.
 */
function handleError(e: FastifyError, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  // The gateway's own database (Idempotency-Key records, charging) restarting is a 503 to retry.
  const known = isAppError(e) ? e : (fromFastify(e) ?? databaseErrorAsAppError(e));
  if (known && known.status < 500) return sendProblem(reply, known);
  if (known?.code === "service_unavailable") {
    req.log.warn({ err: known.cause ?? known }, known.message);
    return sendProblem(reply, known);
  }
  req.log.error({ err: known?.cause ?? e }, "unexpected error");
  return sendProblem(reply, known ?? new AppError("internal_error", "An unexpected error occurred. Quote the request id when contacting support."));
}

/**
 * Fastify's `frameworkErrors`: the router's refusals (a path that does not decode, a parameter over
 * the router's limit), which otherwise answer bare JSON. No hook has run for these requests, so
 * the request id header and the access line are written here.
 */
export function frameworkErrors(e: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  reply.header("x-request-id", req.id);
  handleError(e, req, reply);
  req.log.info({ method: req.method, url: req.url, status: reply.statusCode }, "request");
}

export function registerProblemHandling(app: FastifyInstance): void {
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((req, reply) => sendProblem(reply, new AppError("route_not_found", `No route ${req.method} ${req.url.split("?")[0] ?? ""}.`)));
}
