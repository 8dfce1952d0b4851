import type { Api, ApiResponse, Tenant } from "@tasksvc/testing";
import { eventually } from "@tasksvc/testing";
import { expect } from "vitest";

// The steps of an import through HTTP, shared by the import tests: upload a file as for
// attachments, start the import, wait for its job to finish.

export interface ImportOptions {
  format?: "csv" | "jsonl";
  contentType?: string;
  dryRun?: boolean;
  headers?: Record<string, string>;
  token?: string;
}

/** A ticket, then the bytes PUT to its link; answers the file key. */
export async function uploadFile(gw: Api, t: Tenant, text: string | Buffer, o: ImportOptions = {}): Promise<string> {
  const bytes = typeof text === "string" ? Buffer.from(text) : text;
  const contentType = o.contentType ?? (o.format === "jsonl" ? "application/x-ndjson" : "text/csv");
  const ticket = await gw.post(
    "/v1/imports/uploads",
    { file_name: `tasks.${o.format ?? "csv"}`, content_type: contentType, size: bytes.length },
    {
      token: o.token ?? t.apiKey,
    },
  );
  expect(ticket.status, ticket.text).toBe(201);
  const put = await fetch(ticket.body.upload_url, { method: "PUT", body: bytes, headers: { "content-type": contentType } });
  expect(put.status, await put.text()).toBe(200);
  return ticket.body.file_key as string;
}

export function startImport(gw: Api, t: Tenant, fileKey: string, o: ImportOptions = {}): Promise<ApiResponse> {
  const body = { file_key: fileKey, format: o.format ?? "csv", ...(o.dryRun === undefined ? {} : { dry_run: o.dryRun }) };
  return gw.post("/v1/imports", body, { token: o.token ?? t.apiKey, headers: o.headers ?? {} });
}

/** Polls the import until it has finished; answers it. */
export async function finished(gw: Api, t: Tenant, id: string, timeoutMs = 60_000): Promise<ApiResponse["body"]> {
  return eventually(
    async () => {
      const r = await gw.get(`/v1/imports/${id}`, { token: t.apiKey });
      expect(r.status, r.text).toBe(200);
      return r.body.status === "succeeded" || r.body.status === "failed" ? r.body : false;
    },
    { timeoutMs, intervalMs: 200, what: `import ${id} to finish` },
  );
}

/** Upload, start, wait: the finished import. */
export async function importFile(gw: Api, t: Tenant, text: string | Buffer, o: ImportOptions = {}): Promise<ApiResponse["body"]> {
  const key = await uploadFile(gw, t, text, o);
  const started = await startImport(gw, t, key, o);
  expect(started.status, started.text).toBe(202);
  return finished(gw, t, started.body.id);
}

/** Every task of the organization, all pages, archived ones included. */
export async function allTasks(gw: Api, t: Tenant): Promise<Array<Record<string, unknown> & { id: string; title: string }>> {
  const out: Array<Record<string, unknown> & { id: string; title: string }> = [];
  for (const archived of [false, true]) {
    let after: string | null = null;
    do {
      const q: string = `/v1/tasks?limit=100&archived=${archived}${after ? `&after=${encodeURIComponent(after)}` : ""}`;
      const r: ApiResponse = await gw.get(q, { token: t.apiKey });
      expect(r.status, r.text).toBe(200);
      out.push(...r.body.data);
      after = r.body.has_more ? r.body.next_cursor : null;
    } while (after);
  }
  return out;
}
