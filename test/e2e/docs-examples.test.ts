import { e2eContext, openSse, type ApiResponse, type JsonBody, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Every request body the API reference offers (Swagger UI's "Example Value", which "Try it out"
// prefills) is sent as is to a new organization on the pro plan, and must succeed. The
// organization is given only what the example names: tasks T-1 … T-n when it names T-n, and an
// object for each path parameter whose example cannot name one it has (a project, an endpoint).
// The reads are tried the same way with the parameters "Try it out" prefills.
const { gw, f, stack } = e2eContext();
const base = gatewayUrl(stack);

type Json = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  example?: unknown;
}
interface MediaType {
  schema: Json;
  example?: unknown;
  examples?: Record<string, { value?: unknown; summary?: string; description?: string }>;
}
interface OperationDoc {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, MediaType> };
}
interface Document {
  paths: Record<string, Record<string, OperationDoc>>;
  components: { schemas: Record<string, Json> };
}

// The document as the gateway serves it to /docs, read once for the whole file.
const served = await gw.get("/v1/openapi.json");
if (served.status !== 200) throw new Error(`GET /v1/openapi.json answered ${served.status}: ${served.text}`);
const doc = served.body as Document;

const resolve = (schema: Json): Json => {
  const ref = schema["$ref"];
  if (typeof ref !== "string") return schema;
  const target = doc.components.schemas[ref.replace("#/components/schemas/", "")];
  if (!target) throw new Error(`unresolved ${ref}`);
  return resolve(target);
};

/** A schema's sample as reference UIs build it when no body example is given: each field's own example. */
function sampleOf(schema: Json): unknown {
  const s = resolve(schema);
  if (s["example"] !== undefined) return s["example"];
  if (Array.isArray(s["examples"]) && s["examples"].length > 0) return s["examples"][0];
  const props = s["properties"] as Record<string, Json> | undefined;
  if (props) return Object.fromEntries(Object.entries(props).flatMap(([k, v]) => (sampleOf(v) === undefined ? [] : [[k, sampleOf(v)]])));
  for (const member of [...((s["anyOf"] as Json[]) ?? []), ...((s["oneOf"] as Json[]) ?? [])]) {
    const v = sampleOf(member);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

/** The body a reader of the reference is shown for an operation: its own example, else the schema's sample. */
function exampleBody(media: MediaType): unknown {
  if (media.example !== undefined) return media.example;
  const named = Object.values(media.examples ?? {})[0];
  return named?.value !== undefined ? named.value : sampleOf(media.schema);
}

const TASK_REF = /^T-(\d+)$/;
/** The highest task number named anywhere in a value (0 when none). */
function highestTask(value: unknown): number {
  if (typeof value === "string") return Number(TASK_REF.exec(value)?.[1] ?? 0);
  if (Array.isArray(value)) return Math.max(0, ...value.map(highestTask));
  if (typeof value === "object" && value !== null) return Math.max(0, ...Object.values(value).map(highestTask));
  return 0;
}

/**
 * How a new organization gets the object a path parameter names, where the parameter's example
 * cannot (an opaque id is made by the API). A new operation that takes a body and another kind of
 * path parameter adds its line here; reads whose path names something else are not tried.
 */
type Tenant = Awaited<ReturnType<typeof f.tenant>>;
const MAKERS: Record<string, (t: Tenant) => Promise<string>> = {
  organization_id: async (t) => t.organizationId,
  project_id: async (t) => (await must(gw.post("/v1/projects", { name: "Example's project" }, { token: t.apiKey }), 201)).id,
  label_id: async (t) => (await must(gw.post("/v1/labels", { name: "Example's label" }, { token: t.apiKey }), 201)).id,
  field_id: async (t) => (await must(gw.post("/v1/custom-fields", { key: "example", name: "Example's field", type: "text" }, { token: t.apiKey }), 201)).id,
  endpoint_id: async (t) => (await must(gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/example" }, { token: t.apiKey }), 201)).id,
  oauth_client_id: async (t) => (await must(gw.post("/v1/oauth-clients", { name: "Example's client", scopes: ["tasks:read"] }, { token: t.apiKey }), 201)).id,
  // On T-1 (the task_id example, made first), by the tenant, who may then edit it.
  comment_id: async (t) => (await must(gw.post("/v1/tasks/T-1/comments", { body: "Example's comment" }, { token: t.apiKey }), 201)).id,
  // Another member than the tenant's only owner, whom no role change may touch.
  user_id: async (t) => (await f.user(t.organizationId, "member")).userId,
};

async function must(call: Promise<ApiResponse>, status: number): Promise<JsonBody> {
  const r = await call;
  if (r.status !== status) throw new Error(`a prerequisite answered ${r.status}: ${r.text}`);
  return r.body;
}

interface Case {
  method: string;
  path: string;
  operationId: string;
  parameters: Parameter[];
  body?: unknown;
}
const operations: Array<Case & { media?: MediaType }> = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => {
    const media = op.requestBody?.content["application/json"];
    return { method: method.toUpperCase(), path, operationId: op.operationId, parameters: op.parameters ?? [], ...(media ? { media } : {}) };
  }),
);
const pathParams = (c: Case) => c.parameters.filter((p) => p.in === "path");
const makeable = (c: Case) => pathParams(c).every((p) => (typeof p.example === "string" && TASK_REF.test(p.example)) || MAKERS[p.name]);

/**
 * A new organization on the pro plan with what the call's examples name (tasks T-1 … T-n, the
 * object of each path parameter), and the call's target with the examples the reference UI
 * prefills: the path's, and the query's (every one that has an example, as "Try it out" sends).
 */
async function prepare(c: Case): Promise<{ token: string; target: string }> {
  const t = await f.tenant("pro");
  const token = t.apiKey;
  const values = c.parameters.map((p) => p.example);
  // The tasks it names, made in order so that they are numbered T-1 … T-n.
  const tasks = Math.max(highestTask(c.body), highestTask(values));
  for (let n = 1; n <= tasks; n++) expect((await must(gw.post("/v1/tasks", { title: `Task ${n}` }, { token }), 201)).id).toBe(`T-${n}`);
  let path = c.path;
  for (const p of pathParams(c)) {
    const make = MAKERS[p.name];
    const value = typeof p.example === "string" && TASK_REF.test(p.example) ? p.example : make ? await make(t) : undefined;
    if (value === undefined) throw new Error(`${c.operationId}: no way to make the object of path parameter ${p.name}; add it to MAKERS`);
    path = path.replace(`{${p.name}}`, encodeURIComponent(value));
  }
  const query = new URLSearchParams();
  for (const p of c.parameters.filter((p) => p.in === "query")) {
    if (p.required && p.example === undefined) throw new Error(`${c.operationId}: required query parameter ${p.name} has no example`);
    if (p.example !== undefined) query.set(p.name, String(p.example));
  }
  return { token, target: query.size > 0 ? `${path}?${query}` : path };
}

const expect2xx = (r: ApiResponse, what: string) => {
  expect(r.status, `${what}\n${r.text}`).toBeGreaterThanOrEqual(200);
  expect(r.status, `${what}\n${r.text}`).toBeLessThan(300);
};

const withBody = operations.flatMap((o) => (o.media ? [{ ...o, body: exampleBody(o.media) }] : []));

describe("the example request bodies of the served OpenAPI document", () => {
  it("when read, then every operation that takes a JSON body has an example body of its own", () => {
    // Without one, reference UIs merge every field's example into one body: fields that exclude
    // each other and ids of objects that do not exist included.
    expect(withBody.length).toBeGreaterThanOrEqual(14);
    const own = (m: MediaType | undefined) => m?.example !== undefined || Object.values(m?.examples ?? {})[0]?.value !== undefined;
    expect(withBody.filter((o) => !own(o.media)).map((o) => `${o.method} ${o.path}`)).toEqual([]);
  });

  it("when an example cannot be sent as is (it names an uploaded file), then it says so beside it, and it is the only one", () => {
    // Reference UIs show a named example's summary and description with it.
    const noted = withBody.flatMap((o) =>
      Object.values(o.media?.examples ?? {}).map((e) => ({ id: o.operationId, summary: e.summary, description: e.description })),
    );
    expect(noted).toEqual([
      { id: "registerAttachment", summary: expect.stringMatching(/upload/i), description: expect.stringMatching(/not sendable as is/i) },
      { id: "createImport", summary: expect.stringMatching(/upload/i), description: expect.stringMatching(/not sendable as is/i) },
      { id: "acceptInvitation", summary: expect.stringMatching(/token/i), description: expect.stringMatching(/not sendable as is/i) },
    ]);
    expect(withBody.filter((o) => typeof o.body === "object" && o.body !== null && "file_key" in o.body).map((o) => o.operationId)).toEqual([
      "registerAttachment",
      "createImport",
    ]);
  });

  for (const c of withBody) {
    it(`when ${c.operationId}'s example body is sent as is to a new organization, then it succeeds`, async () => {
      const { token, target } = await prepare(c);
      let body = c.body;
      // The one value no example can hold: an uploaded file's key, which only an upload answers.
      // The example's other fields describe that upload; its file_key is replaced by the real one.
      if (c.operationId === "createImport" && typeof body === "object" && body !== null) {
        const csv = "title\nimported\n";
        const ticket = await must(gw.post("/v1/imports/uploads", { file_name: "tasks.csv", content_type: "text/csv", size: csv.length }, { token }), 201);
        const put = await fetch(ticket.upload_url, { method: "PUT", body: csv, headers: { "content-type": "text/csv" } });
        expect(put.status, await put.text()).toBe(200);
        body = { ...body, file_key: ticket.file_key };
      } else if (typeof body === "object" && body !== null && "file_key" in body) {
        const { file_name, content_type, size } = body as { file_name: string; content_type: string; size: number; file_key: unknown };
        const ticket = await must(gw.post(`${target.replace(/\/attachments$/, "/attachments/uploads")}`, { file_name, content_type, size }, { token }), 201);
        const put = await fetch(ticket.upload_url, { method: "PUT", body: "x".repeat(size), headers: { "content-type": content_type } });
        expect(put.status, await put.text()).toBe(200);
        body = { ...body, file_key: ticket.file_key };
      }
      // Likewise an invitation's token, which only its creation answers.
      if (c.operationId === "acceptInvitation" && typeof body === "object" && body !== null) {
        const invitation = await must(gw.post("/v1/invitations", { email: f.email(), role: "member" }, { token }), 201);
        body = { ...body, token: invitation.token };
      }
      // The MCP transport asks every client to accept both answer forms, as its description says.
      const headers = c.operationId === "postMcpMessage" ? { accept: "application/json, text/event-stream" } : undefined;
      expect2xx(await gw.request(c.method, target, { token, body, ...(headers ? { headers } : {}) }), `${c.method} ${target} ${JSON.stringify(body)}`);
    });
  }
});

describe("the parameter examples of the served OpenAPI document", () => {
  const reads = operations.filter((o) => o.method === "GET" && makeable(o));
  it("when read, then the reads tried below include the lists with filters", () => {
    expect(reads.map((o) => o.operationId)).toEqual(expect.arrayContaining(["listTasks", "listEvents", "getDailyPlan", "listWebhookDeliveries"]));
  });

  for (const c of reads) {
    it(`when ${c.operationId} is tried out with its prefilled parameters in a new organization, then it succeeds`, async () => {
      const { token, target } = await prepare(c);
      if (c.path === "/v1/events/stream") {
        // A stream never ends by itself: its answer's head is the check.
        const s = await openSse(new URL(target, base).toString(), { token });
        s.close();
        expect(s.status, JSON.stringify(s.problem)).toBe(200);
        return;
      }
      expect2xx(await gw.get(target, { token }), `GET ${target}`);
    });
  }
});
