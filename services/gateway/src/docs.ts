import { ERROR_CATALOG, ERROR_CODES } from "@tasksvc/contracts";
import type { FastifyInstance } from "fastify";
import { buildOpenApi } from "./openapi.js";
import type { Operation } from "./operations.js";

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>` +
  `<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem}` +
  `table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.35rem .5rem;text-align:left;vertical-align:top}` +
  `code{background:#f4f4f4;padding:0 .2rem}</style></head><body>${body}</body></html>`;

/**
 * Public, unauthenticated documentation: the OpenAPI document (`/v1/openapi.json`), a reference
 * page of every operation (`/docs`), and the error catalog that problem `type`s point to
 * (`/docs/errors#<code>`). All three are rendered once, at start, from the same route table.
 */
export function registerDocs(app: FastifyInstance, operations: readonly Operation[]): void {
  const document = buildOpenApi(operations);
  const documentJson = JSON.stringify(document);
  const rows = operations
    .map(
      (r) =>
        `<tr><td><code>${r.method}</code></td><td><code>${esc(r.url)}</code></td><td>${esc(r.summary)}</td><td><code>${r.scope}</code></td><td>${r.idempotent ? "yes" : ""}</td></tr>`,
    )
    .join("");
  const docsHtml = page(
    "Task Service API",
    `<h1>Task Service API <small>v1.0.0</small></h1><p>Machine-readable: <a href="/v1/openapi.json">/v1/openapi.json</a> (OpenAPI 3.1). ` +
      `Errors: <a href="/docs/errors">/docs/errors</a>. Authenticate with <code>Authorization: Bearer &lt;API key or access token&gt;</code>.</p>` +
      `<table><thead><tr><th>Method</th><th>Path</th><th>What</th><th>Scope</th><th>Idempotency-Key</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
  const errorsHtml = page(
    "Errors",
    `<h1>Errors</h1><p>Every error is <code>application/problem+json</code> with <code>type</code>, <code>title</code>, <code>status</code>, <code>code</code>, <code>detail</code>; ` +
      `validation errors add <code>errors: [{pointer, message}]</code>; 5xx add <code>request_id</code>.</p><table><thead><tr><th>Status</th><th>Code</th><th>Title</th></tr></thead><tbody>` +
      ERROR_CODES.map((c) => `<tr id="${c}"><td>${ERROR_CATALOG[c].status}</td><td><code>${c}</code></td><td>${esc(ERROR_CATALOG[c].title)}</td></tr>`).join(
        "",
      ) +
      `</tbody></table>`,
  );
  app.get("/v1/openapi.json", async (_req, reply) => reply.type("application/json; charset=utf-8").send(documentJson));
  app.get("/docs", async (_req, reply) => reply.type("text/html; charset=utf-8").send(docsHtml));
  app.get("/docs/errors", async (_req, reply) => reply.type("text/html; charset=utf-8").send(errorsHtml));
}
