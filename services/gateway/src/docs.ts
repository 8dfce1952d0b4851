import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { AppError } from "@tasksvc/errors";
import type { FastifyInstance } from "fastify";
import { errorsPage } from "./errors-page.js";
import { buildOpenApi } from "./openapi.js";
import type { Operation } from "./operations.js";
import { sendProblem } from "./problems.js";

/** The reference UI's files, served from the installed swagger-ui-dist package (no CDN). */
const UI_FILES: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "favicon-32x32.png": "image/png",
};

/** How the UI starts: the document of this gateway, try-it against this gateway, no validator call-out. */
const INIT_JS = `window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // The default would send the document to validator.swagger.io: nothing leaves this gateway.
  validatorUrl: null,
  displayOperationId: true,
  displayRequestDuration: true,
  docExpansion: "list",
  defaultModelsExpandDepth: 1,
  persistAuthorization: false,
});
`;

const DOCS_HTML = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Task Service API</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script></body></html>`;

/** Stands for the server's URL in the document built at start, filled in with the gateway's base URL. */
const SERVER_URL_SLOT = "\u0000server-url\u0000";

/**
 * Public, unauthenticated documentation:
 * - `/v1/openapi.json`, the OpenAPI 3.1 document built from the route table, its `servers` this
 *   gateway's base URL (PUBLIC_BASE_URL, else http://localhost:<port>; never the request's Host),
 *   so that the reference's Servers box and "Try it out" name a URL a client can call;
 * - `/docs`, Swagger UI over that document, every file served by this gateway from the installed
 *   `swagger-ui-dist` package (no CDN, no call to the validator service), with "Try it out"
 *   sending real requests to this gateway (Authorize takes an API key or access token);
 * - `/docs/errors`, docs/errors.md rendered, each code's row its anchor: where a problem's `type`
 *   points (`/docs/errors#<code>`).
 * All are built once.
 */
export function registerDocs(app: FastifyInstance, operations: readonly Operation[]): void {
  const [before, after] = splitAt(
    JSON.stringify(buildOpenApi(operations, { url: SERVER_URL_SLOT, description: "This gateway" })),
    JSON.stringify(SERVER_URL_SLOT),
  );
  const uiDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const assets = new Map(Object.entries(UI_FILES).map(([name, type]) => [name, { type, body: readFileSync(join(uiDir, name)) }]));
  assets.set("init.js", { type: "text/javascript; charset=utf-8", body: Buffer.from(INIT_JS) });
  const errorsHtml = errorsPage();

  // Completed on the first request: with PORT 0 the base URL is known only once the gateway listens.
  let document: string | undefined;
  app.get("/v1/openapi.json", async (_req, reply) => {
    document ??= before + JSON.stringify(app.publicBaseUrl) + after;
    return reply.type("application/json; charset=utf-8").send(document);
  });
  app.get("/docs", async (_req, reply) => reply.type("text/html; charset=utf-8").send(DOCS_HTML));
  // A fixed list of files, looked up by name: no path reaches the file system.
  app.get<{ Params: { file: string } }>("/docs/assets/:file", async (req, reply) => {
    const asset = assets.get(req.params.file);
    if (!asset) return sendProblem(reply, new AppError("route_not_found", `No documentation asset ${req.params.file}.`));
    return reply.type(asset.type).header("cache-control", "public, max-age=3600").send(asset.body);
  });
  app.get("/docs/errors", async (_req, reply) => reply.type("text/html; charset=utf-8").send(errorsHtml));
}

/** The text before and after the one occurrence of `slot` (there must be exactly one). */
function splitAt(text: string, slot: string): [string, string] {
  const at = text.indexOf(slot);
  if (at < 0 || text.indexOf(slot, at + 1) >= 0) throw new Error("the OpenAPI document must name its server exactly once");
  return [text.slice(0, at), text.slice(at + slot.length)];
}
