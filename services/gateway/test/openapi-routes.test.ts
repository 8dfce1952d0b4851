import { describe, expect, it } from "vitest";
import { buildOpenApi } from "../src/openapi/document.js";
import { operations } from "../src/routes/index.js";
import { bareGateway } from "./bare.js";

// What the document says beside each operation's own schemas: the 405 every path answers to a
// method it does not serve, the Location of a creation, which bodies may be left out, the routes
// that are not operations, and the licence.

type Json = Record<string, unknown>;
type Response = { $ref?: string; headers?: Record<string, Json>; content?: Record<string, Json> };
type Op = {
  operationId: string;
  responses: Record<string, Response>;
  requestBody?: { required: boolean; content: Record<string, Json> };
  security?: unknown[];
};
type Doc = { info: Json; paths: Record<string, Record<string, Op>>; components: { responses: Record<string, Response> } };
const doc = buildOpenApi(operations) as unknown as Doc;
const all = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ where: `${method.toUpperCase()} ${path}`, op })));
const byId = (id: string) => {
  const found = all.find((o) => o.op.operationId === id);
  if (!found) throw new Error(`no operation ${id}`);
  return found.op;
};

describe("the document beside the operations' schemas", () => {
  it("when any path is read, then each of its operations documents the 405 a method the path does not serve answers, with Allow", () => {
    expect(all.filter((o) => o.op.responses["405"]?.$ref !== "#/components/responses/MethodNotAllowed").map((o) => o.where)).toEqual([]);
    const shared = doc.components.responses["MethodNotAllowed"];
    expect(Object.keys(shared?.headers ?? {})).toEqual(["x-request-id", "Allow"]);
    expect(Object.keys(shared?.content?.["application/problem+json"]?.["examples"] as Json)).toEqual(["method_not_allowed"]);
  });

  it("when an operation creates a resource (201), then its 201 documents Location; only the starts of uploads, whose link is a secret, have none", () => {
    const creations = operations.filter((o) => o.status === 201);
    expect(creations.length).toBeGreaterThanOrEqual(8);
    const without = creations.filter((o) => o.location === undefined).map((o) => o.operationId);
    expect(without).toEqual(["startAttachmentUpload", "startImportUpload"]);
    for (const o of creations.filter((c) => c.location !== undefined)) {
      const location = byId(o.operationId).responses["201"]?.headers?.["Location"];
      expect(location?.["description"], o.operationId).toContain(o.location);
    }
    expect(byId("createTask").responses["201"]?.headers?.["Location"]?.["description"]).toContain("`/v1/tasks/{id}`");
  });

  it("when a body may be left out (the webhook test event, marking every notification read), then requestBody.required is false; every other body is required", () => {
    expect(byId("sendWebhookTestEvent").requestBody?.required).toBe(false);
    const optional = all.filter((o) => o.op.requestBody?.required === false).map((o) => o.op.operationId);
    expect(optional.sort()).toEqual(["readAllNotifications", "sendWebhookTestEvent"]);
  });

  it("when the attachment registration's example is read, then it says beside it that it needs a finished upload first", () => {
    const media = byId("registerAttachment").requestBody?.content["application/json"] as { example?: unknown; examples?: Record<string, Json> };
    expect(media.example).toBeUndefined();
    const [named] = Object.values(media.examples ?? {});
    expect(named?.["summary"]).toMatch(/upload/i);
    expect(named?.["description"]).toMatch(/not sendable as is/i);
    expect(named?.["value"]).toMatchObject({ file_name: "notes.txt", content_type: "text/plain", size: 12 });
  });

  it("when the info is read, then the licence is MIT, by name and SPDX identifier", () => {
    expect(doc.info["license"]).toEqual({ name: "MIT", identifier: "MIT" });
  });

  it("when the link routes are read, then they take no credential and document exactly what the gateway answers", () => {
    const upload = doc.paths["/v1/uploads/{capability}"]?.["put"];
    const download = doc.paths["/v1/downloads/{capability}"]?.["get"];
    expect(upload?.security).toEqual([]);
    expect(download?.security).toEqual([]);
    expect(Object.keys(upload?.responses ?? {})).toEqual(["200", "400", "403", "405", "409", "413", "429", "500", "503"]);
    expect(Object.keys(download?.responses ?? {})).toEqual(["200", "403", "404", "405", "429", "500", "503"]);
    expect(upload?.requestBody?.required).toBe(true);
    for (const path of ["/healthz", "/readyz", "/docs", "/docs/errors", "/docs/assets/{file}", "/v1/openapi.json"]) {
      expect(doc.paths[path]?.["get"]?.security, path).toEqual([]);
    }
  });
});

describe("a path whose parameter is empty", () => {
  it("when GET /v1/tasks/ or another path with an empty id is sent, with a credential or not, then 404 route_not_found before authentication, like an unknown path", async () => {
    // The bare gateway has no authenticator: a request that reached authentication would be a 500.
    const app = bareGateway({ blobs: {} as never });
    try {
      for (const [method, url] of [
        ["GET", "/v1/tasks/"],
        ["PATCH", "/v1/tasks/?x=1"],
        ["GET", "/v1/tasks//history"],
        ["DELETE", "/v1/tasks/T-1/dependencies/"],
        ["PUT", "/v1/uploads/"],
        // A method the path would not serve either: no 405, since the path names no route.
        ["PUT", "/v1/tasks/"],
      ] as const) {
        const r = await app.inject({ method, url, headers: { authorization: "Bearer svc_live_whatever" } });
        expect(r.statusCode, `${method} ${url}: ${r.body}`).toBe(404);
        expect(r.json()).toMatchObject({ code: "route_not_found", detail: `No route ${method} ${url.split("?")[0]}.` });
        expect(r.headers.allow).toBeUndefined();
      }
    } finally {
      await app.close();
    }
  });
});
