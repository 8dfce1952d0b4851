import {
  Event,
  ApiKey,
  Attachment,
  Board,
  BoardEntry,
  BoardSection,
  CreatedApiKey,
  CreatedWebhookEndpoint,
  DateOnly,
  DeliveryAttempt,
  DependencyItem,
  DependencyView,
  DownloadLink,
  ERROR_CATALOG,
  ERROR_CODES,
  FieldError,
  fieldDoc,
  IDEMPOTENCY_KEY_PATTERN,
  parameterDoc,
  Member,
  Organization,
  ProbeResult,
  Project,
  Recurrence,
  RotatedWebhookEndpoint,
  SCOPES,
  Task,
  TaskVersion,
  UploadTicket,
  Usage,
  WebhookDelivery,
  WebhookEndpoint,
  type ErrorCode,
} from "@tasksvc/contracts";
import { z } from "zod";
import type { Operation } from "./operations.js";

type Json = Record<string, unknown>;

/**
 * The resources a client works with, as named components (`#/components/schemas/Task`): every
 * response that holds one refers to it, so generated clients get one `Task` type, not one per
 * operation. Request bodies and the other responses are named after their operation
 * (`CreateTaskRequest`, `ListTasksResponse`).
 */
const RESOURCES: ReadonlyArray<[z.ZodType, string]> = [
  [Organization, "Organization"],
  [Member, "Member"],
  [ApiKey, "ApiKey"],
  [CreatedApiKey, "CreatedApiKey"],
  [Usage, "Usage"],
  [Task, "Task"],
  [TaskVersion, "TaskVersion"],
  [Recurrence, "Recurrence"],
  [DependencyItem, "DependencyItem"],
  [DependencyView, "DependencyView"],
  [Project, "Project"],
  [Attachment, "Attachment"],
  [UploadTicket, "UploadTicket"],
  [DownloadLink, "DownloadLink"],
  [Board, "DailyPlan"],
  [BoardSection, "DailyPlanSection"],
  [BoardEntry, "DailyPlanEntry"],
  [WebhookEndpoint, "WebhookEndpoint"],
  [CreatedWebhookEndpoint, "CreatedWebhookEndpoint"],
  [RotatedWebhookEndpoint, "RotatedWebhookEndpoint"],
  [WebhookDelivery, "WebhookDelivery"],
  [Event, "Event"],
  [DeliveryAttempt, "WebhookDeliveryAttempt"],
  [ProbeResult, "WebhookProbeResult"],
];

/** The OpenAPI tag of each resource (route file), with what it groups. */
const TAGS: Record<string, { name: string; description: string }> = {
  organizations: { name: "Organizations", description: "The credential's organization." },
  members: { name: "Members", description: "The organization's users and their roles." },
  "api-keys": { name: "API keys", description: "Keys for servers and CI jobs: scoped, expiring, revocable; the secret is shown once." },
  usage: { name: "Usage", description: "API calls and storage used in the current billing period." },
  tasks: { name: "Tasks", description: "Tasks numbered T-<n> per organization, each change an immutable version." },
  dependencies: { name: "Dependencies", description: "What blocks a task; the graph is always acyclic." },
  attachments: { name: "Attachments", description: "Files on tasks: start an upload, send the bytes, register, download." },
  projects: { name: "Projects", description: "Groups of tasks; a task may belong to several." },
  "daily-plan": { name: "Daily plan", description: "Each user's board for a day: TODO, PROGRESS and DONE sections." },
  events: {
    name: "Events",
    description: "Task events of the last 30 days, exactly as webhooks deliver them: catch up on missed deliveries or rebuild state.",
  },
  "webhook-endpoints": {
    name: "Webhook endpoints",
    description: "Signed outbound events (Standard Webhooks): endpoints, secrets, the delivery log, replays.",
  },
};

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);
const COMPONENT_REF = (id: string) => `#/components/schemas/${id}`;

/** Calendar days (`YYYY-MM-DD`) are `format: date`; zod only knows them as refined strings. */
const override: NonNullable<Parameters<typeof z.toJSONSchema>[1]>["override"] = (ctx) => {
  if (ctx.zodSchema === (DateOnly as unknown)) ctx.jsonSchema.format = "date";
};

/**
 * Every property of a component gets its description and an example (libs/contracts
 * field-docs.ts) where its schema has none; nested objects are named after the component.
 */
function documentFields(component: string, schema: Json): void {
  const props = schema["properties"];
  if (typeof props === "object" && props !== null) {
    for (const [field, value] of Object.entries(props as Record<string, Json>)) {
      const doc = fieldDoc(component, field);
      if (doc) {
        // A $ref's siblings are allowed in 3.1; the field's meaning belongs next to the reference.
        value["description"] ??= doc.description;
        value["examples"] ??= [doc.example];
      }
      // An inline object (a task's recurrence, the usage's burst) is documented as its own kind.
      documentFields(pascal(field), value);
    }
  }
  for (const member of [...((schema["anyOf"] as Json[]) ?? []), ...((schema["oneOf"] as Json[]) ?? [])]) documentFields(component, member);
  const items = schema["items"];
  if (typeof items === "object" && items !== null) documentFields(component, items as Json);
}

/** One registry's schemas as components, each `$ref` pointing into #/components/schemas. */
function componentsOf(registry: z.core.$ZodRegistry<{ id?: string | undefined }>, io: "input" | "output"): Record<string, Json> {
  const out = z.toJSONSchema(registry, { target: "draft-2020-12", io, unrepresentable: "any", uri: COMPONENT_REF, override }) as {
    schemas: Record<string, Json>;
  };
  const schemas: Record<string, Json> = {};
  for (const [id, schema] of Object.entries(out.schemas)) {
    const { $schema: _drop, $id: _ref, id: _id, ...rest } = schema;
    documentFields(id, rest);
    schemas[id] = rest;
  }
  return schemas;
}

/** An inline schema (parameters), dates as `format: date`. */
const schemaOf = (s: z.ZodType, io: "input" | "output"): Json => {
  const { $schema: _drop, ...rest } = z.toJSONSchema(s, { target: "draft-2020-12", io, unrepresentable: "any", override }) as Json;
  return rest;
};

const Problem = z.object({
  type: z.string().describe("URL of the code's entry on the errors page: `<PUBLIC_BASE_URL or the request's origin>/docs/errors#<code>`"),
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

function parametersOf(def: Operation): Json[] {
  const out: Json[] = [];
  for (const [where, schema] of [
    ["path", def.params],
    ["query", def.query],
  ] as const) {
    if (!schema) continue;
    const js = schemaOf(schema, "input") as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      const doc = parameterDoc(def.operationId, name);
      out.push({
        name,
        in: where,
        required: where === "path" || (js.required ?? []).includes(name),
        ...(doc ? { description: doc.description } : {}),
        ...(doc?.example === undefined ? {} : { example: doc.example }),
        schema: s,
      });
    }
  }
  if (def.idempotent) {
    out.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description: "Retry safely: the same key and byte-identical body within 24 h replays the first response (spec section 8).",
      example: "3f1c9a52-6b1e-4d4a-9a57-0c2f7e8b1d20",
      schema: { type: "string", pattern: IDEMPOTENCY_KEY_PATTERN.source },
    });
  }
  return out;
}

/** OpenAPI 3.1 document of the public API, generated from the route table and its zod schemas. */
export function buildOpenApi(operations: readonly Operation[]): Json {
  // Responses (output types) and request bodies (input types) are two registries: zod converts
  // each registry for one direction. Every response and body gets a name; resources keep theirs.
  const outputs = z.registry<{ id?: string | undefined }>();
  const inputs = z.registry<{ id?: string | undefined }>();
  for (const [schema, id] of RESOURCES) outputs.add(schema, { id });
  outputs.add(Problem, { id: "Problem" });
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
    if (def.idempotent) successHeaders["Idempotency-Replayed"] = header("`true` when this is a stored response replayed for a repeated Idempotency-Key");
    const responses: Record<string, Json> = {
      [String(def.status)]: {
        description: def.summary,
        headers: successHeaders,
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
    if (def.params && extra.has(404)) extra.delete(404);
    for (const [st, codes] of extra) responses[String(st)] = problemResponse(codes);
    const op: Json = {
      operationId: def.operationId,
      tags: [TAGS[def.resource]?.name ?? def.resource],
      summary: def.summary,
      description: `Requires scope \`${def.scope}\` and plan entitlement \`${def.entitlement}\`. Costs 1 API call${def.idempotent ? " (an idempotent replay costs nothing)" : ""}.`,
      // OpenAPI 3.1 lets a bearer requirement name the roles it needs: here, the scope.
      security: [{ bearer: [def.scope] }],
      "x-required-scope": def.scope,
      "x-entitlement": def.entitlement,
      parameters: parametersOf(def),
      responses,
    };
    if (def.body)
      op["requestBody"] = { required: true, content: { "application/json": { schema: ref(inputs, def.body, `${pascal(def.operationId)}Request`) } } };
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
    tags: Object.values(TAGS).filter((t) => operations.some((o) => TAGS[o.resource]?.name === t.name)),
    paths,
    components: {
      schemas: { ...componentsOf(outputs, "output"), ...componentsOf(inputs, "input") },
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
}
