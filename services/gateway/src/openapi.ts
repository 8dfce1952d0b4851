import { ERROR_CATALOG, ERROR_CODES, type ErrorCode, FieldError, IDEMPOTENCY_KEY_PATTERN, SCOPES, TaskFilterSchema } from "@tasksvc/contracts";
import { z } from "zod";
import { addConditionalResponses, conditionalParameters } from "./openapi-conditional.js";
import type { Operation } from "./operations.js";
import { REQUEST_EXAMPLES, REQUEST_EXAMPLE_NOTES } from "./request-examples.js";
import { ROUTE_SCHEMAS, ROUTE_TAGS, routePaths } from "./openapi-routes.js";
import { RESOURCES, TAGS } from "./openapi-resources.js";

type Json = Record<string, unknown>;

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);
const COMPONENT_REF = (id: string) => `#/components/schemas/${id}`;
const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * A schema's description and examples written after the keywords that say what the value is, in
 * every schema it holds. zod writes a field's metadata (libs/contracts) before or after those
 * depending on where the field states it (on a nullable or optional wrapper, beside a `$ref`).
 */
function docsLast(schema: Json): void {
  for (const key of ["description", "examples"]) {
    if (!(key in schema)) continue;
    const value = schema[key];
    delete schema[key];
    schema[key] = value;
  }
  const props = isJson(schema["properties"]) ? Object.values(schema["properties"]) : [];
  const members = ["anyOf", "oneOf", "allOf"].flatMap((k) => (Array.isArray(schema[k]) ? (schema[k] as unknown[]) : []));
  for (const sub of [...props, ...members, schema["items"], schema["additionalProperties"]]) if (isJson(sub)) docsLast(sub);
}

/** One registry's schemas as components, each `$ref` pointing into #/components/schemas. */
function componentsOf(registry: z.core.$ZodRegistry<{ id?: string | undefined }>, io: "input" | "output"): Record<string, Json> {
  const out = z.toJSONSchema(registry, { target: "draft-2020-12", io, unrepresentable: "any", uri: COMPONENT_REF }) as {
    schemas: Record<string, Json>;
  };
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(out.schemas)) {
    const { $schema: _drop, $id: _ref, id: _id, ...rest } = schema;
    docsLast(rest);
    schemas[id] = rest;
  }
  return schemas;
}

/** An inline schema (parameters). */
const schemaOf = (s: z.ZodType, io: "input" | "output"): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any" }) as Json;
  return rest;
};

const Problem = z.object({
  type: z.string().meta({
    description: "URL of the code's entry on the errors page: `<this API's base URL>/docs/errors#<code>`",
    examples: ["https://api.example.com/docs/errors#validation_failed"],
  }),
  title: z.string().meta({ description: "A short, human summary of the code.", examples: ["Validation failed"] }),
  status: z
    .number()
    .int()
    .meta({ description: "The HTTP status, repeated.", examples: [400] }),
  code: z
    .enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]])
    .meta({ description: "The stable, machine-readable error code: branch on it.", examples: ["validation_failed"] }),
  detail: z.string().meta({ description: "What went wrong with this request, for a person.", examples: ["The request body is invalid: /name is required"] }),
  request_id: z
    .string()
    .optional()
    .meta({ description: "Present on 5xx; also in the x-request-id header", examples: ["req_e903a3119ecb434ab66f13614829a34b"] }),
  errors: z
    .array(FieldError)
    .optional()
    .meta({ description: "Field errors, each with an RFC 6901 pointer", examples: [[{ pointer: "/name", message: "is required" }]] }),
});

const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });
const REQUEST_ID = header("Unique id of this request; quote it in support requests.");
const RATE_HEADERS = {
  "RateLimit-Policy": header('Structured field: `"burst";q=<allowance>;w=<seconds>, "api-calls";q=<allowance>;w=<seconds>`'),
  RateLimit: header('Structured field: `"burst";r=<remaining>;t=<seconds to reset>`'),
  "X-RateLimit-Limit": header("Burst allowance of the credential", { type: "integer" }),
  "X-RateLimit-Remaining": header("Calls left in the current burst window", { type: "integer" }),
  "X-RateLimit-Reset": header("Unix epoch seconds when the burst window resets", { type: "integer" }),
};

function problemResponse(codes: ErrorCode[], extraHeaders: Json = {}): Json {
  // One example per code the response may carry, so the docs show what each looks like.
  const examples = Object.fromEntries(
    codes.map((c) => [
      c,
      {
        summary: ERROR_CATALOG[c].title,
        value: {
          type: `https://api.example.com/docs/errors#${c}`,
          title: ERROR_CATALOG[c].title,
          status: ERROR_CATALOG[c].status,
          code: c,
          detail: `${ERROR_CATALOG[c].title}.`,
        },
      },
    ]),
  );
  return {
    description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOG[c].title}`).join("; "),
    headers: { "x-request-id": REQUEST_ID, ...extraHeaders },
    content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" }, examples } },
  };
}

function codesWithStatus(status: number): ErrorCode[] {
  return ERROR_CODES.filter((c) => ERROR_CATALOG[c].status === status);
}

/** A field's documentation: its metadata, or that of the schema it makes optional, nullable or defaulted. */
function docOf(field: z.core.$ZodType): z.core.GlobalMeta | undefined {
  const meta = z.globalRegistry.get(field);
  const inner = (field._zod.def as { innerType?: z.core.$ZodType }).innerType;
  return meta?.description === undefined && inner ? docOf(inner) : meta;
}

function parametersOf(def: Operation): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ["path", def.params],
    ["query", def.query],
  ] as const) {
    if (!schema) continue;
    const js = schemaOf(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
    const fields: Record<string, z.ZodType> = schema instanceof z.ZodObject ? schema.shape : {};
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      // A parameter's documentation is its field's metadata, stated on the parameter itself. Read
      // from the field, not from its JSON Schema: zod leaves the examples out of a transforming
      // field's input form (a query flag that arrives as text).
      const field = fields[name];
      const doc = field === undefined ? undefined : docOf(field);
      const { description: _description, examples: _examples, ...valueSchema } = s;
      out.push({
        name,
        in: where,
        required: where === "path" || (js.required ?? []).includes(name),
        ...(doc?.description === undefined ? {} : { description: doc.description }),
        ...(Array.isArray(doc?.["examples"]) ? { example: doc["examples"][0] } : {}),
        schema: valueSchema,
      });
    }
  }
  out.push(...conditionalParameters(def));
  if (def.idempotent) {
    out.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description:
        "Retry safely: the same key and byte-identical body within 24 h replays the first response. Use a new key for each new request, a UUID for example (`3f1c9a52-6b1e-4d4a-9a57-0c2f7e8b1d20`).",
      // No example: "Try it out" would send the same key with every request, replaying the first
      // response (or refusing another body) instead of doing what was asked.
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    });
  }
  return out;
}

/**
 * The one 405 of the document, referred to by every operation: OpenAPI has no place for the
 * answer to a method a path does not serve, so each operation names it (it is what any other
 * method sent to the same path answers), and validators and generated clients read it as usual.
 */
const METHOD_NOT_ALLOWED_REF = { $ref: "#/components/responses/MethodNotAllowed" };
const methodNotAllowed = (): Json =>
  problemResponse(["method_not_allowed"], {
    Allow: header("The methods this path serves, e.g. `GET, HEAD, PATCH`"),
  });

/** Where the API is served, as the document's `servers` names it. */
export interface ServerEntry {
  url: string;
  description?: string;
}

/**
 * The server of the document that is not served by a gateway (docs/openapi.json, the typed
 * client's source): a gateway run locally on its default port. A gateway serves the document
 * with PUBLIC_BASE_URL instead, else `/`: the origin the document was fetched from (docs.ts).
 */
export const LOCAL_SERVER: ServerEntry = {
  url: "http://localhost:8080",
  description: "A gateway running on this machine with its default port; use your deployment's base URL instead.",
};

/** Keys whose values are data (examples, allowed values), not prose: their strings stay as they are. */
const DATA_KEYS = new Set(["example", "examples", "enum", "const", "default"]);

/**
 * Descriptions are CommonMark, and reference UIs render them with raw HTML allowed and then
 * sanitised: a placeholder such as T-<n> outside a code span is taken for an unknown tag and
 * vanishes. Every `<` and `>` outside code spans is escaped the CommonMark way (`\<`), which
 * every Markdown renderer shows as the character itself; code spans already show it literally.
 */
export function markdownText(text: string): string {
  return text.replace(/(`+)[\s\S]*?\1|(?<!\\)[<>]/g, (m) => (m === "<" || m === ">" ? `\\${m}` : m));
}

/** Every `description` of the document (info, tags, operations, parameters, responses, headers, schemas) as Markdown text. */
function escapeDescriptions(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) escapeDescriptions(item);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  const obj = node as Json;
  for (const [key, value] of Object.entries(obj)) {
    if (DATA_KEYS.has(key)) continue;
    if (key === "description" && typeof value === "string") obj[key] = markdownText(value);
    else escapeDescriptions(value);
  }
}

/**
 * OpenAPI 3.1 document of the public API, generated from the route table and its zod schemas,
 * with the routes beside the operations (health, documentation, links: openapi-routes.ts);
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
