import { randomUUID } from "node:crypto";
import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { allTasks, finished, importFile, startImport, uploadFile } from "./import-steps.js";

// The rules of the import routes through HTTP: what an upload takes, which file an import takes,
// scopes, idempotency, the per-organization bound, and other organizations.
const { gw, gw2, f, db } = e2eContext();

const CSV = "title\nfrom a file\n";
const ticket = (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  gw.post("/v1/imports/uploads", { file_name: "tasks.csv", content_type: "text/csv", size: 100, ...body }, { token, headers });

describe("import uploads", () => {
  it("when the content type is not one an import reads, or not UTF-8, or the file is past the largest import, then 400 naming the field", async () => {
    const t = await f.tenant();
    for (const [body, pointer] of [
      [{ content_type: "application/pdf" }, "/content_type"],
      [{ content_type: "text/csv; charset=latin1" }, "/content_type"],
      [{ size: 2 * 1024 ** 3 }, "/size"],
      [{ size: 0 }, "/size"],
      [{ file_name: "" }, "/file_name"],
    ] as const) {
      const r = await ticket(t.apiKey, body);
      expect(r.status, r.text).toBe(400);
      expect(r.body.errors[0].pointer).toBe(pointer);
    }
    const ok = await ticket(t.apiKey, { content_type: "application/x-ndjson; charset=utf-8", size: 1024 ** 3 });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.body).toEqual({
      upload_url: expect.stringContaining("/v1/uploads/"),
      upload_method: "PUT",
      file_key: expect.any(String),
      expires_at: expect.any(String),
    });
  });

  it("when an upload start is sent again with its Idempotency-Key, then the same ticket", async () => {
    const t = await f.tenant();
    const key = randomUUID();
    const first = await ticket(t.apiKey, {}, { "idempotency-key": key });
    const again = await gw2.post(
      "/v1/imports/uploads",
      { file_name: "tasks.csv", content_type: "text/csv", size: 100 },
      { token: t.apiKey, headers: { "idempotency-key": key } },
    );
    expect(first.status, first.text).toBe(201);
    expect(again.body).toEqual(first.body);
  });
});

describe("starting an import", () => {
  it("when the file key is unknown, not uploaded yet, an attachment's, another organization's, or of another format, then 400 naming the field", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const as = { token: t.apiKey };
    const unknown = await startImport(gw, t, "imp/nothing/here");
    expect([unknown.status, unknown.body.errors?.[0]?.pointer], unknown.text).toEqual([400, "/file_key"]);
    const notYet = await ticket(t.apiKey, {});
    const early = await startImport(gw, t, notYet.body.file_key);
    expect([early.status, early.body.errors?.[0]?.pointer], early.text).toEqual([400, "/file_key"]);
    const task = await gw.post("/v1/tasks", { title: "with a file" }, as);
    const att = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "a.csv", content_type: "text/csv", size: 4 }, as);
    await fetch(att.body.upload_url, { method: "PUT", body: "a\nb\n" });
    const attachment = await startImport(gw, t, att.body.file_key);
    expect([attachment.status, attachment.body.errors?.[0]?.pointer], attachment.text).toEqual([400, "/file_key"]);
    const theirs = await uploadFile(gw, other, CSV);
    const foreign = await startImport(gw, t, theirs);
    expect([foreign.status, foreign.body.errors?.[0]?.pointer], foreign.text).toEqual([400, "/file_key"]);
    const csv = await uploadFile(gw, t, CSV);
    const wrong = await startImport(gw, t, csv, { format: "jsonl" });
    expect([wrong.status, wrong.body.errors?.[0]?.pointer], wrong.text).toEqual([400, "/format"]);
    const bad = await gw.post("/v1/imports", { file_key: csv, format: "xlsx" }, as);
    expect([bad.status, bad.body.errors?.[0]?.pointer], bad.text).toEqual([400, "/format"]);
    // None of the refusals took the file: it still imports.
    const ok = await startImport(gw, t, csv);
    expect(ok.status, ok.text).toBe(202);
    expect(await finished(gw, t, ok.body.id)).toMatchObject({ status: "succeeded", counts: { created: 1, failed: 0 } });
    // Once imported, the file is gone: the same key again is refused.
    const twice = await startImport(gw, t, csv);
    expect([twice.status, twice.body.errors?.[0]?.pointer], twice.text).toEqual([400, "/file_key"]);
  });

  it("when the start is sent again with its Idempotency-Key, then the same import, and the file is imported once", async () => {
    const t = await f.tenant();
    const key = await uploadFile(gw, t, CSV);
    const headers = { "idempotency-key": randomUUID() };
    const first = await startImport(gw, t, key, { headers });
    const again = await startImport(gw2, t, key, { headers });
    expect(first.status, first.text).toBe(202);
    expect(again.status, again.text).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    await finished(gw, t, first.body.id);
    expect((await allTasks(gw, t)).map((x) => x.title)).toEqual(["from a file"]);
    expect((await gw.get("/v1/imports", { token: t.apiKey })).body.data.map((i: { id: string }) => i.id)).toEqual([first.body.id]);
  });

  it("when the credential lacks tasks:write or projects:write, then 403 naming the scope; tasks:read reads imports", async () => {
    const t = await f.tenant();
    const key = await uploadFile(gw, t, CSV);
    for (const [scopes, missing] of [
      [["tasks:write", "tasks:read"], "projects:write"],
      [["projects:write", "tasks:read"], "tasks:write"],
    ] as const) {
      const token = await f.token(t.organizationId, t.userId, [...scopes]);
      const r = await startImport(gw, t, key, { token });
      expect(r.status, r.text).toBe(403);
      expect(r.body.detail).toContain(missing);
    }
    const both = await f.token(t.organizationId, t.userId, ["tasks:write", "projects:write"]);
    const made = await startImport(gw, t, key, { token: both });
    expect(made.status, made.text).toBe(202);
    const reader = await f.token(t.organizationId, t.userId, ["tasks:read"]);
    expect((await gw.get(`/v1/imports/${made.body.id}`, { token: reader })).status).toBe(200);
    expect((await gw.get("/v1/imports", { token: reader })).status).toBe(200);
    const noRead = await f.token(t.organizationId, t.userId, ["projects:read"]);
    expect((await gw.get("/v1/imports", { token: noRead })).status).toBe(403);
  });

  it("when an organization has as many imports queued or running as allowed, then the next is 429 with Retry-After and takes nothing", async () => {
    const t = await f.tenant();
    // Two imports that no worker has taken yet (as after a burst of starts).
    for (const n of [1, 2]) {
      await db`insert into tasks.imports (id, organization_id, user_id, file_key, format, dry_run, bytes_total)
        values (${`imp_held_${n}_${t.organizationId}`}, ${t.organizationId}, ${t.userId}, ${`imp/held/${n}/${t.organizationId}`}, 'csv', false, 10)`;
    }
    const key = await uploadFile(gw, t, CSV);
    const refused = await startImport(gw, t, key);
    expect(refused.status, refused.text).toBe(429);
    expect(refused.body.code).toBe("rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    await db`update tasks.imports set status = 'failed', completed_at = now() where organization_id = ${t.organizationId}`;
    const later = await startImport(gw, t, key);
    expect(later.status, later.text).toBe(202);
  });
});

describe("reading imports", () => {
  it("when another organization reads an import, then 404; the list shows only the organization's own, newest first, page by page", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const a = await importFile(gw, t, CSV);
    const b = await importFile(gw, t, "title\nsecond\n");
    const theirs = await gw.get(`/v1/imports/${a.id}`, { token: other.apiKey });
    expect(theirs.status, theirs.text).toBe(404);
    expect(theirs.body.code).toBe("resource_not_found");
    expect((await gw.get("/v1/imports", { token: other.apiKey })).body.data).toEqual([]);
    const first = await gw.get("/v1/imports?limit=1", { token: t.apiKey });
    expect(first.body.data).toEqual([b]);
    expect(first.body.has_more).toBe(true);
    const second = await gw.get(`/v1/imports?limit=1&after=${encodeURIComponent(first.body.next_cursor)}`, { token: t.apiKey });
    expect(second.body).toEqual({ data: [a], has_more: false, next_cursor: null });
    expect(Object.keys(a)).toEqual(["id", "status", "dry_run", "progress", "counts", "errors", "created_at", "completed_at"]);
  });
});
