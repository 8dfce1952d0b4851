import { CreateExportBody, Export, ExportParams, type ExportView, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";
import { linkTo } from "./attachments.js";

/** The tasks service signs the file's link; only the gateway knows the public origin it starts with. */
function shown(v: ExportView, origin: string): Export {
  return {
    id: v.id,
    status: v.status,
    format: v.format,
    include: v.include,
    progress: v.progress,
    download_url: v.download === null ? null : linkTo(v.download, origin, "/v1/downloads/"),
    expires_at: v.expires_at,
    error: v.error,
    created_at: v.created_at,
    completed_at: v.completed_at,
  };
}

/** An export reads the organization's tasks and projects, so it needs both read scopes; it changes nothing. */
export const exports = resource({ name: "exports", scope: "tasks:read" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/exports",
      operationId: "createExport",
      summary: "Export the organization's tasks and what they refer to, as JSONL or CSV, by a job: poll the export until it succeeded, then fetch its file",
      body: CreateExportBody,
      status: 202,
      response: Export,
      idempotent: true,
      alsoScopes: ["projects:read"],
      errors: ["limit_reached"],
    },
    async ({ clients, body, ctx, origin }) => shown(await clients.tasks.call("createExport", body, ctx), origin),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/exports/:export_id",
      operationId: "getExport",
      summary: "An export's status and progress; once it succeeded, a link to its file (valid until `expires_at`)",
      params: ExportParams,
      response: Export,
      errors: ["resource_not_found"],
    },
    async ({ clients, params, ctx, origin }) => shown(await clients.tasks.call("getExport", params, ctx), origin),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/exports",
      operationId: "listExports",
      summary: "The organization's exports, newest first",
      query: PageQuery.strict(),
      response: page(Export),
      paginated: true,
    },
    async ({ clients, query, ctx, origin }) => {
      const p = await clients.tasks.call("listExports", query, ctx);
      return { data: p.data.map((v) => shown(v, origin)), has_more: p.has_more, next_cursor: p.next_cursor };
    },
  );
});
