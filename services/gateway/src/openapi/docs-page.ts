import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { brotliCompress, constants as zlibConstants, gzip } from "node:zlib";
import { AppError } from "@tasksvc/errors";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { errorsPage } from "./errors-page.js";
import { buildOpenApi } from "./document.js";
import { DOCS_ASSETS } from "./plain-routes.js";
import { sendProblem } from "../http/problems.js";
import type { Operation } from "../pipeline/operation.js";

/** Served from the installed swagger-ui-dist package (no CDN). */
const UI_FILES = Object.entries(DOCS_ASSETS).filter(([name]) => name !== "init.js");

/** The validator service is never called: the page and its requests stay with this gateway. */
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

/** Public and changes only with a release; past this, If-None-Match revalidates it for the price of a 304. */
export const OPENAPI_CACHE_CONTROL = "public, max-age=300";

type Coding = "br" | "gzip" | "identity";
const CODINGS: readonly Coding[] = ["br", "gzip", "identity"];

interface Encoded {
  body: Buffer;
  etag: string;
}

async function encodeDocument(text: string): Promise<Record<Coding, Encoded>> {
  const identity = Buffer.from(text, "utf8");
  const hash = createHash("sha256").update(identity).digest("base64url").slice(0, 27);
  // In the thread pool, once: brotli's best quality takes about a second for this document.
  const [br, gz] = await Promise.all([
    promisify(brotliCompress)(identity, {
      params: {
        [zlibConstants.BROTLI_PARAM_MODE]: zlibConstants.BROTLI_MODE_TEXT,
        [zlibConstants.BROTLI_PARAM_QUALITY]: zlibConstants.BROTLI_MAX_QUALITY,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: identity.length,
      },
    }),
    promisify(gzip)(identity, { level: zlibConstants.Z_BEST_COMPRESSION }),
  ]);
  return {
    identity: { body: identity, etag: `"${hash}"` },
    gzip: { body: gz, etag: `"${hash}-gzip"` },
    br: { body: br, etag: `"${hash}-br"` },
  };
}

/** A 406 would help no client of a public document: identity when nothing else is acceptable. */
export function chooseCoding(acceptEncoding: string | undefined): Coding {
  if (!acceptEncoding) return "identity";
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(",")) {
    const [name = "", ...params] = part.split(";").map((p) => p.trim());
    if (name === "") continue;
    const qParam = params.find((p) => /^q\s*=/i.test(p));
    const value = qParam === undefined ? 1 : Number(qParam.slice(qParam.indexOf("=") + 1).trim());
    q.set(name.toLowerCase(), Number.isFinite(value) ? value : 0);
  }
  const weight = (c: Coding) => q.get(c) ?? (c === "gzip" ? q.get("x-gzip") : undefined) ?? q.get("*") ?? (c === "identity" ? 1 : 0);
  let best: Coding = "identity";
  let bestQ = 0;
  for (const c of CODINGS) {
    const w = weight(c);
    if (w > bestQ) {
      best = c;
      bestQ = w;
    }
  }
  return best;
}

/** Whichever coding the client got it in. */
export function holdsCurrent(ifNoneMatch: string | undefined, etags: readonly string[]): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === "*") return true;
  for (const m of ifNoneMatch.matchAll(/(?:W\/)?("[^"]*")/g)) if (m[1] !== undefined && etags.includes(m[1])) return true;
  return false;
}

/**
 * The document's `servers` is PUBLIC_BASE_URL, else `/`, which a client resolves against the URL
 * it fetched it from (never the request's Host, which the gateway does not trust): "Try it out"
 * then calls the origin the page was opened on, with no cross-origin request.
 */
export function registerDocs(app: FastifyInstance, operations: readonly Operation[], serverUrl: string): void {
  const document = JSON.stringify(buildOpenApi(operations, { url: serverUrl, description: "This gateway" }));
  const uiDir = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
  const assets = new Map(UI_FILES.map(([name, type]) => [name, { type, body: readFileSync(join(uiDir, name)) }]));
  assets.set("init.js", { type: DOCS_ASSETS["init.js"] ?? "text/javascript; charset=utf-8", body: Buffer.from(INIT_JS) });
  const errorsHtml = errorsPage();

  // Encoded on the first request, so start-up does not wait a second for brotli; then a flood of
  // requests for this half-megabyte document costs no serializing and no compressing.
  let encoded: Promise<Record<Coding, Encoded>> | undefined;
  app.get("/v1/openapi.json", async (req: FastifyRequest, reply) => {
    encoded ??= encodeDocument(document);
    const variants = await encoded;
    const coding = chooseCoding(req.headers["accept-encoding"]);
    const chosen = variants[coding];
    reply.header("vary", "Accept-Encoding").header("cache-control", OPENAPI_CACHE_CONTROL).header("etag", chosen.etag);
    const etags = CODINGS.map((c) => variants[c].etag);
    if (holdsCurrent(req.headers["if-none-match"], etags)) return reply.code(304).send();
    if (coding !== "identity") reply.header("content-encoding", coding);
    return reply.type("application/json; charset=utf-8").send(chosen.body);
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
