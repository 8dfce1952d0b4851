import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ERROR_CODES } from "@tasksvc/contracts";
import { api, factories, gatewayUrl } from "@tasksvc/testing";
import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, describe, expect, inject, it } from "vitest";
import { bareGateway } from "./bare.js";
import { routeTable } from "./route-table.js";
import { buildOpenApi } from "../src/openapi/document.js";
import { operations } from "../src/routes/index.js";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
afterAll(() => f.close());

type Doc = {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }>; "x-required-scope": string }>>;
  components: { schemas: Record<string, unknown> };
};
const doc = buildOpenApi(operations) as unknown as Doc;
const committedPath = fileURLToPath(new URL("../../../docs/openapi.json", import.meta.url));

// Responses are checked against the DOCUMENT's schemas (JSON Schema 2020-12), not the zod ones,
// so a generator bug that misdescribes a response is caught.
// Formats are not checked by keyword: zod emits an explicit pattern for date-times, which ajv checks.
const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
function validatorFor(path: string, method: string, status: number, media = "application/json") {
  const schema = doc.paths[path]?.[method]?.responses[String(status)]?.content?.[media]?.schema;
  if (!schema) throw new Error(`no ${status} ${media} response documented for ${method.toUpperCase()} ${path}`);
  const fixed = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
  return ajv.compile(fixed);
}
function expectMatches(path: string, method: string, r: { status: number; body: unknown; text: string }, media?: string) {
  const validate = validatorFor(path, method, r.status, media);
  expect(validate(r.body), `${method.toUpperCase()} ${path} ${r.status}: ${ajv.errorsText(validate.errors)}\n${r.text}`).toBe(true);
}

describe("the OpenAPI document", () => {
  it("when validated against the OpenAPI 3.1 schema, then it is valid", async () => {
    const res = await new Validator().validate(JSON.parse(JSON.stringify(doc)));
    expect(res.valid, JSON.stringify(res.errors, null, 2)).toBe(true);
    expect((doc as unknown as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("when compared with docs/openapi.json, then the committed copy is current (run `npm run openapi`)", () => {
    expect(JSON.parse(readFileSync(committedPath, "utf8"))).toEqual(JSON.parse(JSON.stringify(doc)));
  });

  it("when the gateway's router is read, then every route it serves is documented (operations with their scope, health, documentation and links too), and every documented one is served", async () => {
    // The routes a real gateway serves, read from fastify's router once it is ready: a route
    // added without an operation or an entry in the document, or an operation the document lacks,
    // fails here. With the built-in store (a store that is never called), so that the link routes
    // are served too.
    const app = bareGateway({ blobs: {} as never });
    const policy = new Map<string, { scope: string; entitlement: string }>();
    app.addHook("onRoute", (r) => {
      const op = r.config?.operation;
      if (op) for (const method of [r.method].flat()) policy.set(`${method} ${r.url}`, { scope: op.scope, entitlement: op.entitlement });
    });
    await app.ready();
    try {
      const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => ({
          method,
          path,
          scope: op["x-required-scope"],
          entitlement: (op as unknown as Record<string, string>)["x-entitlement"],
        })),
      );
      // HEAD is GET's, added by fastify wherever GET is; the catch-all OPTIONS (CORS preflights)
      // is off here, as it is without CORS_ORIGINS.
      const served = routeTable(app)
        .filter((r) => r.method !== "HEAD")
        .map((r) => ({
          method: r.method.toLowerCase(),
          path: r.url.replace(/:([a-z_]+)/g, "{$1}"),
          scope: policy.get(`${r.method} ${r.url}`)?.scope,
          entitlement: policy.get(`${r.method} ${r.url}`)?.entitlement,
        }));
      const key = (o: { method: string; path: string }) => `${o.method} ${o.path}`;
      expect(served.length).toBeGreaterThanOrEqual(20);
      expect(served.map(key)).toEqual(
        expect.arrayContaining(["get /healthz", "get /v1/openapi.json", "put /v1/uploads/{capability}", "get /v1/downloads/{capability}"]),
      );
      expect([...served].sort((a, b) => key(a).localeCompare(key(b)))).toEqual([...documented].sort((a, b) => key(a).localeCompare(key(b))));
    } finally {
      await app.close();
    }
  });

  it("when served by a gateway with PUBLIC_BASE_URL, then its servers is that URL whatever the Host; without it, `/` (the origin the document came from)", async () => {
    const gateway = (publicBaseUrl?: string) => bareGateway(publicBaseUrl ? { publicBaseUrl, port: 8080 } : { port: 8080 });
    const withBase = gateway("https://api.example.com");
    const withoutBase = gateway();
    try {
      const served = await withBase.inject({ method: "GET", url: "/v1/openapi.json", headers: { host: "attacker.example" } });
      expect(served.statusCode, served.body).toBe(200);
      expect(served.json().servers).toEqual([{ url: "https://api.example.com", description: "This gateway" }]);
      // The Host header names whatever the client wants: it never becomes the document's server.
      // Without PUBLIC_BASE_URL the server is relative: "Try it out" calls the page's own origin.
      for (const host of ["attacker.example", "127.0.0.1:9999", undefined]) {
        const local = await withoutBase.inject({ method: "GET", url: "/v1/openapi.json", headers: host === undefined ? {} : { host } });
        expect(local.json().servers, String(host)).toEqual([{ url: "/", description: "This gateway" }]);
      }
    } finally {
      await withBase.close();
      await withoutBase.close();
    }
    // The committed document (the typed client's source) names a real URL too, not "/".
    expect((doc as unknown as { servers: Array<{ url: string }> }).servers).toEqual([{ url: "http://localhost:8080", description: expect.any(String) }]);
  });

  it("when the Problem schema is read, then its code enum is the whole error catalog", () => {
    const problem = doc.components.schemas["Problem"] as { properties: { code: { enum: string[] } } };
    expect([...problem.properties.code.enum].sort()).toEqual([...ERROR_CODES].sort());
  });

  it("when served over HTTP, then /v1/openapi.json is the document naming the origin it came from as its server, and /docs and /docs/errors are pages", async () => {
    const r = await gw.get("/v1/openapi.json");
    expect(r.status, r.text).toBe(200);
    const { servers, ...rest } = r.body;
    const { servers: _committed, ...expected } = JSON.parse(JSON.stringify(doc));
    expect(rest).toEqual(expected);
    // What the reference's Servers box shows and "Try it out" calls: with PUBLIC_BASE_URL unset,
    // the origin the page was opened on, whatever address the request was sent to.
    expect(servers).toEqual([{ url: "/", description: "This gateway" }]);
    const page = await gw.get("/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    // The reference UI's page: it loads the document from this gateway (rendering is checked in a
    // real browser by test/e2e/docs-page.test.ts), and its assets come from here too.
    expect(page.text).toContain("/docs/assets/swagger-ui-bundle.js");
    expect((await gw.get("/docs/assets/init.js")).text).toContain('url: "/v1/openapi.json"');
    const asset = await gw.get("/docs/assets/swagger-ui-bundle.js");
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toMatch(/javascript/);
    // Only the listed files: nothing else of the package or the disk.
    for (const name of ["package.json", "..%2F..%2Fpackage.json", "index.html"]) {
      const r = await gw.get(`/docs/assets/${name}`);
      expect(r.status, name).toBe(404);
      expect(r.body.code).toBe("route_not_found");
    }
    const errors = await gw.get("/docs/errors");
    expect(errors.text).toContain('id="idempotency_key_reused"');
  });
});

describe("real responses match the document", () => {
  it("when each operation is called, then its success and error bodies fit their documented schemas", async () => {
    const t = await f.tenant();
    const get = (p: string) => gw.get(p, { token: t.apiKey });
    expectMatches("/v1/organizations", "get", await get("/v1/organizations"));
    expectMatches("/v1/organizations/{organization_id}", "get", await get(`/v1/organizations/${t.organizationId}`));
    await f.user(t.organizationId);
    const members = await get("/v1/members?limit=1");
    expect(members.body.next_cursor).not.toBeNull();
    expectMatches("/v1/members", "get", members);
    const created = await gw.post("/v1/api-keys", { name: "doc" }, { token: t.apiKey, headers: { "idempotency-key": "doc-1" } });
    expect(created.status, created.text).toBe(201);
    expectMatches("/v1/api-keys", "post", created);
    expectMatches("/v1/api-keys", "get", await get("/v1/api-keys"));
    expectMatches("/v1/usage", "get", await get("/v1/usage"));
    const revoked = await gw.delete(`/v1/api-keys/${created.body.id}`, { token: t.apiKey });
    expectMatches("/v1/api-keys/{key_id}", "delete", revoked);

    const bad = await gw.post("/v1/api-keys", { name: "" }, { token: t.apiKey });
    expect(bad.status).toBe(400);
    expectMatches("/v1/api-keys", "post", bad, "application/problem+json");
    const anon = await gw.get("/v1/organizations");
    expect(anon.status).toBe(401);
    expectMatches("/v1/organizations", "get", anon, "application/problem+json");
    const missing = await gw.delete("/v1/api-keys/key_missing", { token: t.apiKey });
    expect(missing.status).toBe(404);
    expectMatches("/v1/api-keys/{key_id}", "delete", missing, "application/problem+json");
  });

  it("when each task, project and dependency operation is called, then its bodies fit the document", async () => {
    const t = await f.tenant();
    const opts = { token: t.apiKey };
    const project = await gw.post("/v1/projects", { name: "Doc", description: "d" }, opts);
    expectMatches("/v1/projects", "post", project);
    expectMatches("/v1/projects", "get", await gw.get("/v1/projects", opts));
    expectMatches("/v1/projects/{project_id}", "get", await gw.get(`/v1/projects/${project.body.id}`, opts));
    expectMatches("/v1/projects/{project_id}", "patch", await gw.patch(`/v1/projects/${project.body.id}`, { description: null }, opts));
    const a = await gw.post(
      "/v1/tasks",
      { title: "a", project_id: project.body.id, due_date: "2026-12-24", recurrence: { frequency: "MONTHLY", by_month_day: 31 } },
      { ...opts, headers: { "idempotency-key": "doc-task" } },
    );
    expect(a.status, a.text).toBe(201);
    expectMatches("/v1/tasks", "post", a);
    const b = await gw.post("/v1/tasks", { title: "b", parent_task_id: a.body.id }, opts);
    expectMatches("/v1/tasks", "get", await gw.get("/v1/tasks?limit=1", opts));
    expectMatches("/v1/tasks/{task_id}", "get", await gw.get(`/v1/tasks/${a.body.id}`, opts));
    expectMatches("/v1/tasks/{task_id}", "patch", await gw.patch(`/v1/tasks/${a.body.id}`, { story_points: 8 }, opts));
    expectMatches("/v1/tasks/{task_id}/history", "get", await gw.get(`/v1/tasks/${a.body.id}/history`, opts));
    const linked = await gw.post(`/v1/tasks/${a.body.id}/dependencies`, { blocker_task_id: b.body.id }, opts);
    expect(linked.status).toBe(201);
    expectMatches("/v1/tasks/{task_id}/dependencies", "post", linked);
    const relinked = await gw.post(`/v1/tasks/${a.body.id}/dependencies`, { blocker_task_id: b.body.id }, opts);
    expect(relinked.status).toBe(200);
    expectMatches("/v1/tasks/{task_id}/dependencies", "post", relinked);
    const cycle = await gw.post(`/v1/tasks/${b.body.id}/dependencies`, { blocker_task_id: a.body.id }, opts);
    expect(cycle.status).toBe(409);
    expectMatches("/v1/tasks/{task_id}/dependencies", "post", cycle, "application/problem+json");
    expectMatches("/v1/tasks/{task_id}/dependencies", "get", await gw.get(`/v1/tasks/${a.body.id}/dependencies`, opts));
    expectMatches("/v1/tasks/{task_id}/dependencies/{blocker_task_id}", "delete", await gw.delete(`/v1/tasks/${a.body.id}/dependencies/${b.body.id}`, opts));
    expectMatches("/v1/tasks/{task_id}/archive", "post", await gw.post(`/v1/tasks/${a.body.id}/archive`, undefined, opts));
    expectMatches("/v1/tasks/{task_id}/unarchive", "post", await gw.post(`/v1/tasks/${a.body.id}/unarchive`, undefined, opts));
    const unknownParent = await gw.get("/v1/tasks?parent_task_id=T-99", opts);
    expect(unknownParent.status).toBe(404);
    expectMatches("/v1/tasks", "get", unknownParent, "application/problem+json");
    expectMatches("/v1/projects/{project_id}", "delete", await gw.delete(`/v1/projects/${project.body.id}`, opts));
  });

  it("when each webhook-endpoint operation is called, then its bodies fit the document", async () => {
    const t = await f.tenant();
    const opts = { token: t.apiKey };
    const created = await gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/doc" }, { ...opts, headers: { "idempotency-key": "doc-hook" } });
    expect(created.status, created.text).toBe(201);
    expectMatches("/v1/webhook-endpoints", "post", created);
    expectMatches("/v1/webhook-endpoints", "get", await gw.get("/v1/webhook-endpoints", opts));
    const path = `/v1/webhook-endpoints/${created.body.id}`;
    expectMatches("/v1/webhook-endpoints/{endpoint_id}", "get", await gw.get(path, opts));
    expectMatches("/v1/webhook-endpoints/{endpoint_id}", "patch", await gw.patch(path, { event_types: ["task.created"] }, opts));
    const bad = await gw.post("/v1/webhook-endpoints", { url: "http://hooks.example.com/doc" }, opts);
    expect(bad.status, bad.text).toBe(400);
    expectMatches("/v1/webhook-endpoints", "post", bad, "application/problem+json");
    expectMatches("/v1/webhook-endpoints/{endpoint_id}", "delete", await gw.delete(path, opts));
    const gone = await gw.get(path, opts);
    expect(gone.status).toBe(404);
    expectMatches("/v1/webhook-endpoints/{endpoint_id}", "get", gone, "application/problem+json");
  });

  it("when each daily-board operation is called, then its bodies fit the document", async () => {
    const t = await f.tenant();
    const opts = { token: t.apiKey };
    const task = await gw.post("/v1/tasks", { title: "plan me" }, opts);
    const entry = await gw.post(
      "/v1/daily-plan/entries",
      { date: "2026-11-23", task_id: task.body.id, section: "TODO" },
      { ...opts, headers: { "idempotency-key": "doc-plan" } },
    );
    expect(entry.status, entry.text).toBe(201);
    expectMatches("/v1/daily-plan/entries", "post", entry);
    expectMatches("/v1/daily-plan", "get", await gw.get("/v1/daily-plan?date=2026-11-23", opts));
    expectMatches("/v1/daily-plan", "patch", await gw.patch("/v1/daily-plan?date=2026-11-23", { section: "PROGRESS", status: "PLANNED" }, opts));
    const again = await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: task.body.id, section: "TODO" }, opts);
    expect(again.status).toBe(400);
    expectMatches("/v1/daily-plan/entries", "post", again, "application/problem+json");
    const unknown = await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: "T-999", section: "TODO" }, opts);
    expect(unknown.status).toBe(404);
    expectMatches("/v1/daily-plan/entries", "post", unknown, "application/problem+json");
    expectMatches("/v1/daily-plan/entries/{entry_id}", "delete", await gw.delete(`/v1/daily-plan/entries/${entry.body.id}`, opts));
  });

  it("when the routes beside the operations answer (health, the links, a wrong method), then their bodies fit the document", async () => {
    expectMatches("/healthz", "get", await gw.get("/healthz"));
    expectMatches("/readyz", "get", await gw.get("/readyz"));
    const t = await f.tenant();
    const opts = { token: t.apiKey };
    const task = await gw.post("/v1/tasks", { title: "with a file" }, opts);
    const ticket = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "a.txt", content_type: "text/plain", size: 3 }, opts);
    const upload = new URL(ticket.body.upload_url).pathname;
    const put = () => gw.request("PUT", upload, { rawBody: "abc", headers: { "content-type": "text/plain" } });
    expectMatches("/v1/uploads/{capability}", "put", await put());
    const twice = await put();
    expect(twice.status, twice.text).toBe(409);
    expectMatches("/v1/uploads/{capability}", "put", twice, "application/problem+json");
    const forged = await gw.request("PUT", `${upload}x`, { rawBody: "abc", headers: { "content-type": "text/plain" } });
    expect(forged.status, forged.text).toBe(403);
    expectMatches("/v1/uploads/{capability}", "put", forged, "application/problem+json");
    // The shared 405, for any path: a link's path, sent the wrong method.
    const wrong = await gw.get(upload);
    expect(wrong.status, wrong.text).toBe(405);
    const shared = (doc.components as unknown as { responses: Record<string, { content: Record<string, { schema: unknown }> }> }).responses;
    const validate = ajv.compile(
      JSON.parse(JSON.stringify(shared["MethodNotAllowed"]?.content["application/problem+json"]?.schema).replaceAll('"#/components/', '"doc#/components/')),
    );
    expect(validate(wrong.body), ajv.errorsText(validate.errors)).toBe(true);
  });

  it("when the OAuth client operations and endpoints answer, then their bodies fit the document (OAuth's errors in their own shape)", async () => {
    const t = await f.tenant();
    const created = await gw.post("/v1/oauth-clients", { name: "doc", scopes: ["tasks:read"] }, { token: t.apiKey });
    expectMatches("/v1/oauth-clients", "post", created);
    expectMatches("/v1/oauth-clients", "get", await gw.get("/v1/oauth-clients", { token: t.apiKey }));
    expectMatches("/v1/oauth-clients/{oauth_client_id}", "get", await gw.get(`/v1/oauth-clients/${created.body.id}`, { token: t.apiKey }));
    const form = (path: string, body: Record<string, string>) =>
      gw.request("POST", path, { rawBody: new URLSearchParams(body).toString(), headers: { "content-type": "application/x-www-form-urlencoded" } });
    const creds = { client_id: created.body.client_id, client_secret: created.body.client_secret };
    const token = await form("/oauth/token", { grant_type: "client_credentials", ...creds });
    expect(token.status, token.text).toBe(200);
    expectMatches("/oauth/token", "post", token);
    expectMatches("/oauth/token", "post", await form("/oauth/token", { grant_type: "client_credentials", scope: "tasks:write", ...creds }));
    expectMatches("/oauth/token", "post", await form("/oauth/token", { grant_type: "client_credentials", client_id: "cli_x", client_secret: "x" }));
    expectMatches("/oauth/introspect", "post", await form("/oauth/introspect", { token: token.body.access_token, ...creds }));
    expectMatches("/oauth/introspect", "post", await form("/oauth/introspect", { token: "x", ...creds }));
    expectMatches("/.well-known/oauth-authorization-server", "get", await gw.get("/.well-known/oauth-authorization-server"));
    expectMatches("/.well-known/jwks.json", "get", await gw.get("/.well-known/jwks.json"));
    expectMatches("/v1/oauth-clients/{oauth_client_id}", "delete", await gw.delete(`/v1/oauth-clients/${created.body.id}`, { token: t.apiKey }));
  });

  it("when a body breaks its schema, then the check fails (the validator is not vacuous)", () => {
    const validate = validatorFor("/v1/organizations", "get", 200);
    expect(validate({ data: [{ id: 1 }], has_more: "no" })).toBe(false);
  });
});
