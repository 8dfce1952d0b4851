import type { ErrorCode } from "@tasksvc/contracts";
import { ACCEPT_SCHEMAS, acceptRoutePath } from "./accept-route.js";
import { OAUTH_SCHEMAS, OAUTH_TAG, oauthRoutePaths } from "./oauth-routes.js";
import { MCP_SCHEMAS, mcpRoutePaths } from "./mcp-route.js";

// Documented as each answers, so the document names every route the router has.

type Json = Record<string, unknown>;

export interface RouteDocHelpers {
  problem(codes: ErrorCode[], extraHeaders?: Json): Json;
  header(description: string, schema?: Json): Json;
  requestId: Json;
  methodNotAllowed: Json;
}

export const DOCS_ASSETS: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
  "init.js": "text/javascript; charset=utf-8",
};

export const ROUTE_TAGS = {
  health: { name: "Health", description: "Whether this gateway replica is up, and ready to serve: for load balancers and probes." },
  documentation: { name: "Documentation", description: "This reference, the OpenAPI document it is built from, and the page of error codes." },
  oauth: OAUTH_TAG,
} as const;

const text = (description: string, example: unknown, schema: Json = { type: "string" }) => ({ ...schema, description, examples: [example] });

export const ROUTE_SCHEMAS: Record<string, Json> = {
  Liveness: {
    type: "object",
    properties: { status: text("Always `ok`: the process answers.", "ok", { type: "string", const: "ok" }) },
    required: ["status"],
    additionalProperties: false,
  },
  Readiness: {
    type: "object",
    properties: {
      status: text("Always `ready` on a 200 (a replica that is not ready answers 503).", "ready", { type: "string", const: "ready" }),
      checks: {
        type: "object",
        additionalProperties: { type: "string" },
        description: "Each dependency checked (the database, the message bus, each service this gateway forwards to) and its state, `ok` on a 200.",
        examples: [{ postgres: "ok", nats: "ok", "service:tasks": "ok" }],
      },
    },
    required: ["status", "checks"],
    additionalProperties: false,
  },
  UploadReceipt: {
    type: "object",
    properties: {
      file_key: text("The uploaded object's key: register it as an attachment now.", "att/org_3kTM…/upl_…"),
      size: text("The bytes received, as declared when the upload started.", 12, { type: "integer" }),
    },
    required: ["file_key", "size"],
    additionalProperties: false,
  },
  ...ACCEPT_SCHEMAS,
  ...OAUTH_SCHEMAS,
  ...MCP_SCHEMAS,
};

const NO_CREDENTIAL = { security: [] };
const CAPABILITY = {
  name: "capability",
  in: "path",
  required: true,
  description: "The link's capability, as the link was handed out: the link is its own authorization, no credential is sent with it.",
  example: "k1.eyJmIjoiYXR0L29yZ18zazFNIn0.c2lnbmF0dXJl",
  schema: { type: "string", pattern: "^[A-Za-z0-9_.-]{16,4096}$" },
};

export function routePaths(h: RouteDocHelpers): Record<string, Record<string, Json>> {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const retryAfter = { "Retry-After": h.header("Seconds to wait", { type: "integer" }) };
  const anonymous = {
    "405": h.methodNotAllowed,
    "429": h.problem(["rate_limited"], retryAfter),
  };
  const page = (description: string) => ({
    description,
    headers: { "x-request-id": h.requestId },
    content: { "text/html": { schema: { type: "string" } } },
  });
  const op = (tag: string, operationId: string, summary: string, description: string, responses: Json, more: Json = {}) => ({
    operationId,
    tags: [tag],
    summary,
    description,
    ...NO_CREDENTIAL,
    ...more,
    responses,
  });
  const health = ROUTE_TAGS.health.name;
  const docs = ROUTE_TAGS.documentation.name;
  return {
    "/healthz": {
      get: op(health, "getLiveness", "Liveness: the process answers", "No credential. Answers 200 as long as the process runs, whatever its dependencies.", {
        "200": { description: "Alive", headers: { "x-request-id": h.requestId }, content: { "application/json": { schema: ref("Liveness") } } },
        ...anonymous,
      }),
    },
    "/readyz": {
      get: op(
        health,
        "getReadiness",
        "Readiness: the replica can serve requests",
        "No credential. 200 while every dependency answers and the replica is not stopping; 503 naming what is not ready otherwise. Checked at most once a second, whoever asks.",
        {
          "200": { description: "Ready", headers: { "x-request-id": h.requestId }, content: { "application/json": { schema: ref("Readiness") } } },
          ...anonymous,
          "503": h.problem(["service_unavailable"], retryAfter),
        },
      ),
    },
    "/docs": {
      get: op(
        docs,
        "getReferencePage",
        "This reference (HTML)",
        "No credential. The interactive reference of this document; Try it out sends real requests to this gateway.",
        {
          "200": page("The reference page"),
          ...anonymous,
        },
      ),
    },
    "/docs/errors": {
      get: op(
        docs,
        "getErrorsPage",
        "The error codes (HTML)",
        "No credential. Every error code with its status and what to do; a problem's `type` points to its row.",
        {
          "200": page("The errors page, each code's row anchored by the code"),
          ...anonymous,
        },
      ),
    },
    "/docs/assets/{file}": {
      get: op(
        docs,
        "getReferenceAsset",
        "A file of the reference page",
        "No credential. The scripts, style sheet and icon the reference page loads, all served by this gateway.",
        {
          "200": {
            description: "The file",
            headers: { "x-request-id": h.requestId, "Cache-Control": h.header("`public, max-age=3600`") },
            content: Object.fromEntries(Object.values(DOCS_ASSETS).map((type) => [type, { schema: { type: "string" } }])),
          },
          "404": h.problem(["route_not_found"]),
          ...anonymous,
        },
        {
          parameters: [
            {
              name: "file",
              in: "path",
              required: true,
              description: "The file's name.",
              example: "swagger-ui.css",
              schema: { type: "string", enum: Object.keys(DOCS_ASSETS) },
            },
          ],
        },
      ),
    },
    "/v1/openapi.json": {
      get: op(
        docs,
        "getOpenApiDocument",
        "This OpenAPI 3.1 document",
        "No credential. Compressed with brotli or gzip when Accept-Encoding allows; revalidate with If-None-Match.",
        {
          "200": {
            description: "The document",
            headers: {
              "x-request-id": h.requestId,
              ETag: h.header("The document's version in this coding; send it back in If-None-Match"),
              "Cache-Control": h.header("`public, max-age=300`"),
            },
            content: { "application/json": { schema: { type: "object" } } },
          },
          "304": {
            description: "Not modified: If-None-Match names the current document",
            headers: { ETag: h.header("The document's version in this coding") },
          },
          ...anonymous,
        },
        {
          parameters: [
            {
              name: "If-None-Match",
              in: "header",
              required: false,
              description: "The ETag of the copy you hold: while it is current, 304 with no body.",
              schema: { type: "string" },
            },
          ],
        },
      ),
    },
    "/v1/uploads/{capability}": {
      put: op(
        "Attachments",
        "putUploadBytes",
        "Send an upload's bytes to its upload link",
        "No credential: the link (an upload ticket's `upload_url`, with the built-in store) is the authorization. Send exactly the `size` bytes declared when the upload started, before the ticket's `expires_at`; one PUT per ticket (a failed PUT can be sent again). Then register the file as an attachment.",
        {
          "200": {
            description: "The bytes are stored",
            headers: { "x-request-id": h.requestId },
            content: { "application/json": { schema: ref("UploadReceipt") } },
          },
          "400": h.problem(["validation_failed"]),
          "403": h.problem(["link_invalid"]),
          "405": h.methodNotAllowed,
          "409": h.problem(["upload_already_received"]),
          "413": h.problem(["payload_too_large"]),
          "429": h.problem(["rate_limited"], retryAfter),
          "500": h.problem(["internal_error"]),
          "503": h.problem(["service_unavailable"], retryAfter),
        },
        {
          parameters: [CAPABILITY],
          requestBody: {
            required: true,
            description: "The file's bytes, in any media type (the one declared when the upload started is what is stored and served).",
            content: { "*/*": { schema: { type: "string" } } },
          },
        },
      ),
    },
    "/v1/downloads/{capability}": {
      get: op(
        "Attachments",
        "getDownloadBytes",
        "The attachment's bytes, from its download link",
        "No credential: the link (a download link's `download_url`, with the built-in store) is the authorization, until its `expires_at`. Answers the file as an attachment to save, in its stored media type.",
        {
          "200": {
            description: "The file's bytes",
            headers: {
              "x-request-id": h.requestId,
              "Content-Disposition": h.header("`attachment` with the attachment's file name (`filename` and `filename*`)"),
              "Content-Security-Policy": h.header("`sandbox; default-src 'none'`: a file opened in a browser runs no script"),
              "Cache-Control": h.header("`private, no-store`"),
            },
            content: { "*/*": { schema: { type: "string" } } },
          },
          "403": h.problem(["link_invalid"]),
          "404": h.problem(["resource_not_found"]),
          "405": h.methodNotAllowed,
          "429": h.problem(["rate_limited"], retryAfter),
          "500": h.problem(["internal_error"]),
          "503": h.problem(["service_unavailable"], retryAfter),
        },
        { parameters: [CAPABILITY] },
      ),
    },
    ...acceptRoutePath(h),
    ...oauthRoutePaths(h),
    ...mcpRoutePaths(h),
  };
}
