import { CreateImportBody, Import, ImportParams, PageQuery, StartImportUploadBody, UploadTicket, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// A file is uploaded as an attachment's is (the same ticket, link and PUT), then read by a job.
export const imports = resource({ name: "imports", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/imports/uploads",
      operationId: "startImportUpload",
      summary: "Start the upload of a file to import (JSONL or CSV): answers where to PUT its bytes",
      body: StartImportUploadBody,
      status: 201,
      response: UploadTicket,
      idempotent: true,
    },
    async ({ clients, body, ctx, origin }) => {
      const t = await clients.tasks.call("startImportUpload", body, ctx);
      const upload_url = t.target.kind === "direct" ? t.target.url : `${origin}/v1/uploads/${t.target.capability}`;
      return { upload_url, upload_method: "PUT" as const, file_key: t.file_key, expires_at: t.expires_at };
    },
  );
  r.op(
    {
      method: "POST",
      url: "/v1/imports",
      operationId: "createImport",
      summary: "Import an uploaded file: a job reads it line by line; follow it with GET /v1/imports/{import_id}",
      body: CreateImportBody,
      status: 202,
      response: Import,
      idempotent: true,
      // It makes projects, labels and custom fields as well as tasks.
      alsoScopes: ["projects:write"],
      errors: ["rate_limited"],
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createImport", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/imports",
      operationId: "listImports",
      summary: "List the organization's imports, newest first",
      query: PageQuery.strict(),
      response: page(Import),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listImports", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/imports/:import_id",
      operationId: "getImport",
      summary: "Get an import: its status, progress, counts and the first line errors",
      params: ImportParams,
      response: Import,
      errors: ["resource_not_found"],
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getImport", params, ctx),
  );
});
