import { ERROR_CATALOG, ERROR_CODES, FieldError, IDEMPOTENCY_KEY_PATTERN, type ErrorCode } from "@tasksvc/contracts";
import { z } from "zod";
import type { Operation } from "./operations.js";

type Json = Record<string, unknown>;

const schemaOf = (s: z.ZodType, io: "input" | "output"): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  return rest;
};

const Problem = z.object({
  type: z.string().describe("Relative reference to the code's row in /docs/errors"),
  title: z.string(),
  status: z.number().int(),
  code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  detail: z.string(),
  request_id: z.string().optional().describe("Present on 5xx; also in the x-request-id header"),
  errors: z.array(FieldError).optional().describe("Field errors, each with an RFC 6901 pointer"),
});

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });
const REQUEST_ID = header("Unique id of this request; quote it in support requests.");
const RATE_HEADERS = {
  "RateLimit-Policy": header('Structured field: "burst";q=<allowance>;w=<seconds>, "api-calls";q=<allowance>;w=<seconds>'),
  RateLimit: header('Structured field: "burst";r=<remaining>;t=<seconds to reset>'),
  "X-RateLimit-Limit": header("Burst allowance of the credential", { type: "integer" }),
  "X-RateLimit-Remaining": header("Calls left in the current burst window", { type: "integer" }),
  "X-RateLimit-Reset": header("Unix epoch seconds when the burst window resets", { type: "integer" }),
};

function problemResponse(codes: ErrorCode[], extraHeaders: Json = {}): Json {
  return {
    description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOG[c].title}`).join("; "),
    headers: { "x-request-id": REQUEST_ID, ...extraHeaders },
    content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
  };
}

function codesWithStatus(status: number): ErrorCode[] {
  return ERROR_CODES.filter((c) => ERROR_CATALOG[c].status === status);
}

function parametersOf(def: Operation): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ["path", def.params],
    ["query", def.query],
  ] as const) {
    if (!schema) continue;
    const js = schemaOf(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      out.push({ name, in: where, required: where === "path" || (js.required ?? []).includes(name), schema: s });
    }
  }
  if (def.idempotent) {
    out.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description: "Retry safely: the same key and byte-identical body within 24 h replays the first response (spec section 8).",
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    });
  }
  return out;
}

/** OpenAPI 3.1 document of the public API, generated from the route table and its zod schemas. */
export function buildOpenApi(operations: readonly Operation[]): Json {
  const paths: Record<string, Record<string, Json>> = {};
  for (const def of operations) {
    const path = def.url.replace(/:([a-z_]+)/g, "{$1}");
    const successHeaders: Json = { "x-request-id": REQUEST_ID, ...RATE_HEADERS };
    if (def.idempotent) successHeaders["Idempotency-Replayed"] = header("`true` when this is a stored response replayed for a repeated Idempotency-Key");
    const responses: Record<string, Json> = {
      [String(def.status)]: {
        description: def.summary,
        headers: successHeaders,
        content: { "application/json": { schema: schemaOf(def.response, "output") } },
      },
      "400": problemResponse(codesWithStatus(400)),
      "401": problemResponse(codesWithStatus(401), { "WWW-Authenticate": header('Bearer realm="tasksvc"') }),
      "403": problemResponse(codesWithStatus(403)),
      "429": problemResponse(codesWithStatus(429), { "Retry-After": header("Seconds to wait", { type: "integer" }) }),
      "500": problemResponse(["internal_error"]),
      "503": problemResponse(["service_unavailable"], { "Retry-After": header("Seconds to wait", { type: "integer" }) }),
    };
    if (def.params) responses["404"] = problemResponse(["resource_not_found"]);
    for (const [status, description] of Object.entries(def.otherStatuses ?? {})) {
      responses[status] = { description, headers: successHeaders, content: { "application/json": { schema: schemaOf(def.response, "output") } } };
    }
    const extra = new Map<number, ErrorCode[]>();
    for (const code of def.errors ?? []) {
      const st = ERROR_CATALOG[code].status;
      extra.set(st, [...(extra.get(st) ?? []), code]);
    }
    if (def.body) {
      responses["413"] = problemResponse(["payload_too_large"]);
      responses["415"] = problemResponse(["unsupported_media_type"]);
    }
    if (def.idempotent) {
      extra.set(409, [...(extra.get(409) ?? []), "idempotency_in_progress"]);
      extra.set(422, [...(extra.get(422) ?? []), "idempotency_key_reused"]);
    }
    if (def.params && extra.has(404)) extra.delete(404);
    for (const [st, codes] of extra) responses[String(st)] = problemResponse(codes);
    const op: Json = {
      operationId: `${def.method.toLowerCase()}${def.url.replace(/^\/v1/, "").replace(/[/:-]+([a-z])/g, (_m, c: string) => c.toUpperCase())}`,
      summary: def.summary,
      description: `Requires scope \`${def.scope}\` and plan entitlement \`${def.entitlement}\`. Costs 1 API call${def.idempotent ? " (an idempotent replay costs nothing)" : ""}.`,
      security: [{ bearer: [] }],
      "x-required-scope": def.scope,
      "x-entitlement": def.entitlement,
      parameters: parametersOf(def),
      responses,
    };
    if (def.body) op["requestBody"] = { required: true, content: { "application/json": { schema: schemaOf(def.body, "input") } } };
    (paths[path] ??= {})[def.method.toLowerCase()] = op;
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Task Service API",
      version: "1.0.0",
      description:
        "Multi-tenant task management: organizations, API keys, tasks, projects, daily boards, webhooks. Errors are RFC 9457 problems; see /docs/errors.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas: { Problem: schemaOf(Problem, "output") },
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "An API key (`svc_live_…`, sandbox `svc_test_…`) or an OAuth 2.1 access token (JWT with sub, org_id, scope).",
        },
      },
    },
  };
}
