import { randomUUID } from "node:crypto";
import { e2eContext, gatewayUrl, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { type ExportBody, fetchLink, fileOf, finished, linesOf, startExport } from "./exports-helpers.js";

// The rules of exports through HTTP: what a request may ask, who may ask, how many at once, what
// the answers hold, and the file's link. What a file holds is test/e2e/export-content.test.ts.
const { gw, f, db, stack } = e2eContext();
const gateway = () => gatewayUrl(stack);

const newTask = async (t: Pick<Tenant, "apiKey">, title: string) => {
  const r = await gw.post("/v1/tasks", { title }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};
const exportRows = async (org: string) => Number((await db`select count(*)::int as n from tasks.exports where organization_id = ${org}`)[0]?.["n"]);

describe("exports", () => {
  it("when a request names no format, an unknown or repeated part, or parts a CSV cannot carry, then 400 naming the field and nothing is created", async () => {
    const t = await f.tenant();
    for (const [body, pointer] of [
      [{}, "/format"],
      [{ format: "xml" }, "/format"],
      [{ format: "jsonl", include: ["tasks", "attachments"] }, "/include/1"],
      [{ format: "jsonl", include: ["tasks", "tasks"] }, "/include"],
      [{ format: "jsonl", include: [] }, "/include"],
      [{ format: "csv", include: ["tasks", "history"] }, "/include"],
      [{ format: "csv", include: ["projects"] }, "/include"],
      [{ format: "jsonl", since: "2026-01-01" }, ""],
    ] as const) {
      const r = await gw.post("/v1/exports", body, { token: t.apiKey });
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(400);
      expect(r.body.code).toBe("validation_failed");
      if (pointer !== "") expect(pointersOf(r.body), JSON.stringify(body)).toContain(pointer);
    }
    expect(await exportRows(t.organizationId)).toBe(0);
  });

  it("when an export is asked for, then 202 with the export queued or running, and it succeeds with every task counted and a link that lasts 24 hours", async () => {
    const t = await f.tenant();
    for (const title of ["one", "two", "three"]) await newTask(t, title);
    const started = await startExport(gw, t.apiKey, { format: "jsonl" });
    expect(started).toMatchObject({
      id: expect.stringMatching(/^exp_/),
      format: "jsonl",
      include: ["tasks", "history", "comments", "projects", "labels", "custom_fields"],
      download_url: null,
      expires_at: null,
      error: null,
      completed_at: null,
    });
    expect(["queued", "running"]).toContain(started.status);
    const done = await finished(gw, t.apiKey, started.id);
    expect(done).toMatchObject({ id: started.id, status: "succeeded", progress: { done: 3, total: 3 }, error: null, created_at: started.created_at });
    expect(done.download_url).toMatch(/\/v1\/downloads\//);
    const completed = Date.parse(done.completed_at ?? "");
    expect(Date.parse(done.expires_at ?? "") - completed).toBe(24 * 3600_000);
    expect(completed).toBeGreaterThanOrEqual(Date.parse(started.created_at));
    // The CSV's defaults: what a row can show.
    const csv = await startExport(gw, t.apiKey, { format: "csv" });
    expect(csv.include).toEqual(["tasks", "projects", "labels", "custom_fields"]);
    await finished(gw, t.apiKey, csv.id);
  });

  it("when exports are listed, then newest first in keyset pages, each as GET answers it", async () => {
    const t = await f.tenant();
    const made: ExportBody[] = [];
    for (const format of ["jsonl", "csv", "jsonl"]) {
      const e = await startExport(gw, t.apiKey, { format });
      made.push(await finished(gw, t.apiKey, e.id));
    }
    const first = await gw.get("/v1/exports?limit=2", { token: t.apiKey });
    expect(first.status, first.text).toBe(200);
    expect(first.body.data.map((e: ExportBody) => e.id)).toEqual([made[2]?.id, made[1]?.id]);
    expect(first.body.has_more).toBe(true);
    const second = await gw.get(`/v1/exports?limit=2&after=${encodeURIComponent(first.body.next_cursor)}`, { token: t.apiKey });
    expect(second.body).toMatchObject({ data: [{ id: made[0]?.id, status: "succeeded", format: "jsonl" }], has_more: false, next_cursor: null });
    const one = await gw.get(`/v1/exports/${made[0]?.id}`, { token: t.apiKey });
    expect({ ...second.body.data[0], download_url: null }).toEqual({ ...one.body, download_url: null });
  });

  it("when another organization names an export, then 404 and its list does not show it", async () => {
    const owner = await f.tenant();
    const other = await f.tenant();
    const e = await finished(gw, owner.apiKey, (await startExport(gw, owner.apiKey, { format: "jsonl" })).id);
    const r = await gw.get(`/v1/exports/${e.id}`, { token: other.apiKey });
    expect(r.status, r.text).toBe(404);
    expect(r.body.code).toBe("resource_not_found");
    expect((await gw.get("/v1/exports", { token: other.apiKey })).body.data).toEqual([]);
  });

  it("when a credential lacks tasks:read or projects:read, then an export is refused 403 naming the scope; reading exports needs tasks:read only", async () => {
    const t = await f.tenant();
    const onlyTasks = await f.token(t.organizationId, t.userId, ["tasks:read", "tasks:write"]);
    const onlyProjects = await f.token(t.organizationId, t.userId, ["projects:read", "projects:write"]);
    const both = await f.token(t.organizationId, t.userId, ["tasks:read", "projects:read"]);
    for (const [token, missing] of [
      [onlyTasks, "projects:read"],
      [onlyProjects, "tasks:read"],
    ] as const) {
      const r = await gw.post("/v1/exports", { format: "jsonl" }, { token });
      expect(r.status, r.text).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
      expect(r.body.detail).toContain(missing);
    }
    expect(await exportRows(t.organizationId)).toBe(0);
    const e = await startExport(gw, both, { format: "jsonl" });
    expect((await gw.get(`/v1/exports/${e.id}`, { token: onlyTasks })).status).toBe(200);
    expect((await gw.get(`/v1/exports/${e.id}`, { token: onlyProjects })).status).toBe(403);
  });

  it("when an organization already has three exports waiting or running, then a fourth is refused 409 limit_reached until one finishes", async () => {
    const t = await f.tenant();
    // Waiting rows of their own, with no message: they stay waiting for the length of this test.
    for (let i = 0; i < 3; i++) {
      await db`insert into tasks.exports (id, organization_id, requested_by, format, include)
        values (${`exp_waiting_${randomUUID().slice(0, 8)}`}, ${t.organizationId}, ${t.userId}, 'jsonl', '{tasks}')`;
    }
    const refused = await gw.post("/v1/exports", { format: "jsonl" }, { token: t.apiKey });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.code).toBe("limit_reached");
    expect(await exportRows(t.organizationId)).toBe(3);
    await db`update tasks.exports set status = 'failed', completed_at = now() where id in (
      select id from tasks.exports where organization_id = ${t.organizationId} limit 1)`;
    await finished(gw, t.apiKey, (await startExport(gw, t.apiKey, { format: "jsonl" })).id);
  });

  it("when the same Idempotency-Key is sent twice, then one export, answered as it stands now", async () => {
    const t = await f.tenant();
    const key = randomUUID();
    const first = await gw.post("/v1/exports", { format: "csv" }, { token: t.apiKey, headers: { "idempotency-key": key } });
    expect(first.status, first.text).toBe(202);
    await finished(gw, t.apiKey, first.body.id);
    const again = await gw.post("/v1/exports", { format: "csv" }, { token: t.apiKey, headers: { "idempotency-key": key } });
    expect(again.status, again.text).toBe(202);
    expect(again.body.id).toBe(first.body.id);
    expect(await exportRows(t.organizationId)).toBe(1);
  });

  it("when the file's link is fetched, then the file comes as an attachment named after the export; a tampered or expired link is refused", async () => {
    const t = await f.tenant();
    await newTask(t, "to download");
    const e = await finished(gw, t.apiKey, (await startExport(gw, t.apiKey, { format: "jsonl", include: ["tasks"] })).id);
    const url = e.download_url ?? "";
    const r = await fetchLink(gateway(), url);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-disposition")).toContain(`filename="export-${e.id}.jsonl"`);
    expect(r.headers.get("content-type")).toBe("application/x-ndjson");
    expect(r.headers.get("cache-control")).toBe("private, no-store");
    const lines = linesOf(await r.text());
    expect(lines.filter((l) => l.object === "task").map((l) => l["title"])).toEqual(["to download"]);

    const capability = new URL(url).pathname.split("/").at(-1) ?? "";
    const [kid, payload, mac] = capability.split(".");
    const claims = JSON.parse(Buffer.from(payload ?? "", "base64url").toString("utf8"));
    const otherExport = Buffer.from(JSON.stringify({ ...claims, export_id: "exp_someone_else" })).toString("base64url");
    const flipped = `${mac?.slice(0, -2)}${mac?.endsWith("AA") ? "BB" : "AA"}`;
    for (const forged of [`${kid}.${otherExport}.${mac}`, `${kid}.${payload}.${flipped}`]) {
      const refused = await fetchLink(gateway(), url.replace(capability, forged));
      expect(refused.status, forged).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe("link_invalid");
    }
    // Past its expiry the export shows no link and the link it gave is refused; the sweep then removes the file (services/tasks/test/exports.test.ts).
    expect((await fileOf(gateway(), e)).length).toBeGreaterThan(0);
    await db`update tasks.exports set expires_at = now() - interval '1 second' where id = ${e.id}`;
    const expired = await gw.get(`/v1/exports/${e.id}`, { token: t.apiKey });
    expect(expired.body).toMatchObject({ status: "succeeded", download_url: null });
    const late = await fetchLink(gateway(), url);
    expect(late.status).toBe(403);
    expect(((await late.json()) as { code: string }).code).toBe("link_invalid");
  });
});
