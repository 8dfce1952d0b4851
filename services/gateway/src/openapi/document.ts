import { ERROR_CATALOG, type ErrorCode, SCOPES } from "@tasksvc/contracts";
import { z } from "zod";
import type { Operation } from "../pipeline/operation.js";
import { addConditionalResponses } from "./conditional.js";
import { REQUEST_EXAMPLES, REQUEST_EXAMPLE_NOTES } from "./examples.js";
import { escapeDescriptions } from "./markdown.js";
import { parametersOf } from "./parameters.js";
import { MCP_TAG } from "./mcp-route.js";
import { ROUTE_SCHEMAS, ROUTE_TAGS, routePaths } from "./plain-routes.js";
import { RESOURCES, TAGS } from "./resources.js";
import { codesWithStatus, header, METHOD_NOT_ALLOWED_REF, methodNotAllowed, Problem, problemResponse, RATE_HEADERS, REQUEST_ID } from "./responses.js";
import { COMPONENT_REF, componentsOf, type Json, NAMED_INPUTS, pascal } from "./schemas.js";

export interface ServerEntry {
  url: string;
  description?: string;
}

/** Not served by a gateway (docs/openapi.json, the typed client's source): a gateway run locally. */
export const LOCAL_SERVER: ServerEntry = {
  url: "http://localhost:8080",
  description: "A gateway running on this machine with its default port; use your deployment's base URL instead.",
};

/** Every scope the operation requires, as its description says them. */
const scopesText = (def: Operation) =>
  def.alsoScopes.length === 0 ? `scope \`${def.scope}\`` : `scopes ${[def.scope, ...def.alsoScopes].map((s) => `\`${s}\``).join(" and ")}`;

export function buildOpenApi(operations: readonly Operation[], server: ServerEntry = LOCAL_SERVER): Json {
  // zod converts each registry for one direction: responses are outputs, request bodies inputs.
  const outputs = z.registry<{ id?: string | undefined }>();
  const inputs = z.registry<{ id?: string | undefined }>();
  for (const [schema, id] of RESOURCES) outputs.add(schema, { id });
  outputs.add(Problem, { id: "Problem" });
  for (const [id, schema] of Object.entries(NAMED_INPUTS)) inputs.add(schema, { id });
  const ref = (registry: typeof outputs, schema: z.ZodType, fallback: string): Json => {
    const existing = registry.get(schema)?.id;
    if (existing) return { $ref: COMPONENT_REF(existing) };
    registry.add(schema, { id: fallback });
    return { $ref: COMPONENT_REF(fallback) };
  };
  const paths: Record<string, Record<string, Json>> = {};
  for (const def of operations) {
    const response = ref(outputs, def.response, `${pascal(def.operationId)}Response`);
    const path = def.url.replace(/:([a-z_]+)/g, "{$1}");
    const successHeaders: Json = { "x-request-id": REQUEST_ID, ...RATE_HEADERS };
    if (def.idempotent)
      successHeaders["Idempotency-Replayed"] = header(
        "`true` when this is a stored response replayed for a repeated Idempotency-Key (the rate-limit headers then show the current counters: a replay costs nothing)",
      );
    // Only on the creation's own status: a 200 of the same operation created nothing.
    const created: Json =
      def.location === undefined
        ? {}
        : { Location: header(`The created resource's path, \`${def.location}\`, filled in from the answer (and the request where the answer lacks a value)`) };
    const responses: Record<string, Json> = {
      [String(def.status)]: {
        description: def.summary,
        headers: { ...successHeaders, ...created },
        content: { "application/json": { schema: response } },
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
      responses[status] = { description, headers: successHeaders, content: { "application/json": { schema: response } } };
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
    addConditionalResponses(def, successHeaders, responses, problemResponse);
    responses["405"] = METHOD_NOT_ALLOWED_REF;
    if (def.params && extra.has(404)) extra.delete(404);
    for (const [st, codes] of extra) responses[String(st)] = problemResponse(codes);
    const op: Json = {
      operationId: def.operationId,
      tags: [TAGS[def.resource]?.name ?? def.resource],
      summary: def.summary,
      description: `Requires ${scopesText(def)} and plan entitlement \`${def.entitlement}\`. Costs ${def.cost}${def.idempotent ? " (an idempotent replay costs nothing)" : ""}.`,
      security: [{ bearer: [def.scope, ...def.alsoScopes] }],
      "x-required-scope": def.scope,
      "x-entitlement": def.entitlement,
      parameters: parametersOf(def),
      responses,
    };
    if (def.body) {
      // Without an example of their own, reference UIs would merge every field's example, conflicting
      // fields and made-up ids included.
      const example = REQUEST_EXAMPLES[def.operationId];
      const note = REQUEST_EXAMPLE_NOTES[def.operationId];
      const schema = ref(inputs, def.body, `${pascal(def.operationId)}Request`);
      const shown = example === undefined ? {} : note === undefined ? { example } : { examples: { [note.name]: { ...note.text, value: example } } };
      op["requestBody"] = { required: !def.body.safeParse(undefined).success, content: { "application/json": { schema, ...shown } } };
    }
    (paths[path] ??= {})[def.method.toLowerCase()] = op;
  }
  const document: Json = {
    openapi: "3.1.0",
    info: {
      title: "Task Service API",
      version: "1.0.0",
      description:
        "Multi-tenant task management: organizations, API keys, tasks, projects, daily boards, webhooks. Errors are RFC 9457 problems; see /docs/errors.",
      license: { name: "MIT", identifier: "MIT" },
    },
    servers: [server],
    security: [{ bearer: [] }],
    tags: [
      ...Object.values(TAGS).filter((t) => operations.some((o) => TAGS[o.resource]?.name === t.name)),
      ROUTE_TAGS.oauth,
      MCP_TAG,
      ROUTE_TAGS.health,
      ROUTE_TAGS.documentation,
    ],
    paths: { ...paths, ...routePaths({ problem: problemResponse, header, requestId: REQUEST_ID, methodNotAllowed: METHOD_NOT_ALLOWED_REF }) },
    components: {
      schemas: { ...componentsOf(outputs, "output"), ...componentsOf(inputs, "input"), ...ROUTE_SCHEMAS },
      responses: { MethodNotAllowed: methodNotAllowed() },
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description:
            "An API key (`svc_live_…`, sandbox `svc_test_…`) or an OAuth 2.1 access token (JWT with sub, org_id, scope). " +
            `Each operation names the scope it needs; the scopes are ${SCOPES.map((s) => `\`${s}\``).join(", ")}.`,
        },
        clientBasic: {
          type: "http",
          scheme: "basic",
          description:
            "An OAuth client's `client_id` and `client_secret` as HTTP Basic user and password (form-encoded first, RFC 6749 2.3.1): for the /oauth endpoints only.",
        },
      },
    },
  };
  // A copy: the document shares objects with this module's constants.
  const out = structuredClone(document);
  escapeDescriptions(out);
  return out;
}
