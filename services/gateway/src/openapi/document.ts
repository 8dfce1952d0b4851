import { ERROR_CATALOG, type ErrorCode, SCOPES, TaskFilterSchema } from "@tasksvc/contracts";
import { z } from "zod";
import type { Operation } from "../pipeline/operation.js";
import { addConditionalResponses } from "./conditional.js";
import { REQUEST_EXAMPLES, REQUEST_EXAMPLE_NOTES } from "./examples.js";
import { escapeDescriptions } from "./markdown.js";
import { parametersOf } from "./parameters.js";
import { ROUTE_SCHEMAS, ROUTE_TAGS, routePaths } from "./plain-routes.js";
import { RESOURCES, TAGS } from "./resources.js";
import { codesWithStatus, header, METHOD_NOT_ALLOWED_REF, methodNotAllowed, Problem, problemResponse, RATE_HEADERS, REQUEST_ID } from "./responses.js";
import { COMPONENT_REF, componentsOf, type Json, pascal } from "./schemas.js";

/** Where the API is served, as the document's `servers` names it. */
export interface ServerEntry {
  url: string;
  description?: string;
}

/**
 * The server of the document that is not served by a gateway (docs/openapi.json, the typed
 * client's source): a gateway run locally on its default port. A gateway serves the document
 * with PUBLIC_BASE_URL instead, else `/`: the origin the document was fetched from (docs-page.ts).
 */
export const LOCAL_SERVER: ServerEntry = {
  url: "http://localhost:8080",
  description: "A gateway running on this machine with its default port; use your deployment's base URL instead.",
};

/**
 * OpenAPI 3.1 document of the public API, generated from the route table and its zod schemas,
 * with the routes beside the operations (health, documentation, links: plain-routes.ts);
 * `server` is where it is served (a gateway passes PUBLIC_BASE_URL, else `/`).
 */
export function buildOpenApi(operations: readonly Operation[], server: ServerEntry = LOCAL_SERVER): Json {
  // Responses (output types) and request bodies (input types) are two registries: zod converts
  // each registry for one direction. Every response and body gets a name; resources keep theirs.
  const outputs = z.registry<{ id?: string | undefined }>();
  const inputs = z.registry<{ id?: string | undefined }>();
  for (const [schema, id] of RESOURCES) outputs.add(schema, { id });
  outputs.add(Problem, { id: "Problem" });
  // Recursive: named, so that it can refer to itself.
  inputs.add(TaskFilterSchema, { id: "TaskFilter" });
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
      description: `Requires scope \`${def.scope}\` and plan entitlement \`${def.entitlement}\`. Costs ${def.cost}${def.idempotent ? " (an idempotent replay costs nothing)" : ""}.`,
      // OpenAPI 3.1 lets a bearer requirement name the roles it needs: here, the scope.
      security: [{ bearer: [def.scope] }],
      "x-required-scope": def.scope,
      "x-entitlement": def.entitlement,
      parameters: parametersOf(def),
      responses,
    };
    if (def.body) {
      // The body reference UIs show and prefill: one a new organization can send as is
      // (REQUEST_EXAMPLES); without it they would merge every field's example, conflicting
      // fields and made-up ids included.
      const example = REQUEST_EXAMPLES[def.operationId];
      const note = REQUEST_EXAMPLE_NOTES[def.operationId];
      const schema = ref(inputs, def.body, `${pascal(def.operationId)}Request`);
      // An example that cannot be sent as is says so beside it: a named example carries a summary
      // and a description, which reference UIs show with it.
      const shown = example === undefined ? {} : note === undefined ? { example } : { examples: { [note.name]: { ...note.text, value: example } } };
      // A body the operation's schema lets a request leave out (`.optional()`) is not required.
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
    tags: [...Object.values(TAGS).filter((t) => operations.some((o) => TAGS[o.resource]?.name === t.name)), ROUTE_TAGS.health, ROUTE_TAGS.documentation],
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
      },
    },
  };
  // A copy: the document shares objects with this module's constants (tags, headers), left as written.
  const out = structuredClone(document);
  escapeDescriptions(out);
  return out;
}
