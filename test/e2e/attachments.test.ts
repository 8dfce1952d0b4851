import { createHash, randomBytes } from "node:crypto";
import { createClient, unwrap } from "@tasksvc/client";
import { e2eContext, type Tenant, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Issue 12 through HTTP with the default store (BLOB_STORE=nats: the bytes stream through the
// gateway into JetStream). The S3 path: attachments-s3.test.ts. The attachment operations are
// raw HTTP (statuses, bytes and links are the subject); the task fixture uses @tasksvc/client.
const { stack, gw, gw2, f } = e2eContext();

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

async function task(t: Tenant): Promise<string> {
  const api = createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });
  return unwrap(await api.POST("/v1/tasks", { body: { title: "with files" } })).id;
}

const start = (t: Tenant, taskId: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  gw.post(`/v1/tasks/${taskId}/attachments/uploads`, body, { token: t.apiKey, headers });

/** PUTs bytes to an upload link (no credential: the link is the authorization). */
const put = (url: string, bytes: Uint8Array, contentType = "application/octet-stream") =>
  fetch(url, { method: "PUT", body: bytes, headers: { "content-type": contentType } }).then(async (r) => ({ status: r.status, text: await r.text() }));

describe("attachments, two phases, JetStream store", () => {
  it("when a file is started, PUT and registered, then it is listed and its download link answers exactly its bytes, type and name", async () => {
    const t = await f.tenant();
    const id = await task(t);
    const bytes = randomBytes(3 * 1024 * 1024 + 5);
    const s = await start(t, id, { file_name: "Q3 report (final).pdf", content_type: "application/pdf", size: bytes.length });
    expect(s.status, s.text).toBe(201);
    expect(s.body).toEqual({
      upload_url: expect.stringContaining("/v1/uploads/"),
      upload_method: "PUT",
      file_key: expect.any(String),
      expires_at: expect.any(String),
    });
    const ttl = Date.parse(s.body.expires_at) - Date.now();
    expect(ttl).toBeGreaterThan(14 * 60_000);
    expect(ttl).toBeLessThanOrEqual(15 * 60_000);
    const up = await put(s.body.upload_url, bytes, "application/pdf");
    expect(up.status, up.text).toBe(200);

    const reg = await gw.post(
      `/v1/tasks/${id}/attachments`,
      { file_name: "Q3 report (final).pdf", file_key: s.body.file_key, content_type: "application/pdf", size: bytes.length },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    expect(reg.body).toEqual({
      id: expect.any(String),
      file_name: "Q3 report (final).pdf",
      content_type: "application/pdf",
      size: bytes.length,
      created_at: expect.any(String),
    });

    const usage = await gw.get("/v1/usage", { token: t.apiKey });
    expect(usage.body).toMatchObject({ storage_used: bytes.length, storage_allowance: 10 * 1024 ** 3, max_file_size: 100 * 1024 ** 2 });

    // An edit makes a new version; the attachment stays visible (decision 0016).
    const edit = await gw.patch(`/v1/tasks/${id}`, { title: "with files, edited" }, { token: t.apiKey });
    expect(edit.status, edit.text).toBe(200);
    const list = await gw.get(`/v1/tasks/${id}/attachments`, { token: t.apiKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body.data).toEqual([reg.body]);

    const link = await gw2.get(`/v1/tasks/${id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    expect(link.status, link.text).toBe(200);
    const dl = await fetch(link.body.download_url);
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-type")).toBe("application/pdf");
    expect(dl.headers.get("content-disposition")).toContain("filename*=UTF-8''Q3%20report%20%28final%29.pdf");
    expect(sha(new Uint8Array(await dl.arrayBuffer()))).toBe(sha(bytes));
  });

  it("when the upload link is used twice, or tampered with, or sent the wrong number of bytes, then 409, 403, 413 or 400 and nothing is stored wrongly", async () => {
    const t = await f.tenant();
    const id = await task(t);
    const bytes = randomBytes(200_000);
    const s = await start(t, id, { file_name: "a.bin", content_type: "application/octet-stream", size: bytes.length });
    expect(s.status, s.text).toBe(201);
    const url: string = s.body.upload_url;

    const more = await put(url, Buffer.concat([bytes, Buffer.from("x")]));
    expect(more.status, more.text).toBe(413);
    const fewer = await put(url, bytes.subarray(1));
    expect(fewer.status, fewer.text).toBe(400);
    expect(JSON.parse(fewer.text).errors?.[0]?.pointer).toBe("/size");
    // A failed PUT leaves the ticket usable: the right bytes still go in, once.
    const ok = await put(url, bytes);
    expect(ok.status, ok.text).toBe(200);
    const again = await put(url, bytes);
    expect(again.status, again.text).toBe(409);
    expect(JSON.parse(again.text).code).toBe("upload_already_received");

    const last = url.at(-2) === "A" ? "B" : "A";
    const tampered = `${url.slice(0, -2)}${last}${url.at(-1)}`;
    const forged = await put(tampered, bytes);
    expect(forged.status, forged.text).toBe(403);
    expect(JSON.parse(forged.text).code).toBe("link_invalid");
  });

  it("when the size is past the plan's largest file or the storage allowance, then 400 naming /size; exactly at a limit is accepted", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, max_file_size: 1000, storage: 1500 });
    const id = await task(t);
    const past = await start(t, id, { file_name: "big", content_type: "text/plain", size: 1001 });
    expect(past.status, past.text).toBe(400);
    expect(past.body.errors?.[0]?.pointer).toBe("/size");
    const atFile = await start(t, id, { file_name: "a", content_type: "text/plain", size: 1000 });
    expect(atFile.status, atFile.text).toBe(201);
    // 1000 reserved by the open ticket: 500 more fits exactly, one byte more does not.
    const overStorage = await start(t, id, { file_name: "b", content_type: "text/plain", size: 501 });
    expect(overStorage.status, overStorage.text).toBe(400);
    expect(overStorage.body.errors?.[0]?.pointer).toBe("/size");
    const atStorage = await start(t, id, { file_name: "c", content_type: "text/plain", size: 500 });
    expect(atStorage.status, atStorage.text).toBe(201);
  });

  it("when the PUT carries no content type, or another one, then the bytes are stored with the declared type", async () => {
    const t = await f.tenant();
    const id = await task(t);
    for (const headers of [{}, { "content-type": "image/png" }] as Record<string, string>[]) {
      const bytes = randomBytes(64);
      const s = await start(t, id, { file_name: "typed.csv", content_type: "text/csv", size: 64 });
      const up = await fetch(s.body.upload_url, { method: "PUT", body: bytes, headers });
      expect(up.status, await up.text()).toBe(200);
      const reg = await gw.post(
        `/v1/tasks/${id}/attachments`,
        { file_name: "typed.csv", file_key: s.body.file_key, content_type: "text/csv", size: 64 },
        { token: t.apiKey },
      );
      const link = await gw.get(`/v1/tasks/${id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
      const dl = await fetch(link.body.download_url);
      expect(dl.headers.get("content-type")).toBe("text/csv");
      expect(Buffer.from(await dl.arrayBuffer()).equals(bytes)).toBe(true);
    }
  });

  it("when upload-start is replayed with its Idempotency-Key, then the same ticket", async () => {
    const t = await f.tenant();
    const id = await task(t);
    const body = { file_name: "r.txt", content_type: "text/plain; charset=utf-8", size: 10 };
    const first = await start(t, id, body, { "idempotency-key": "upload-1" });
    expect(first.status, first.text).toBe(201);
    const again = await gw2.post(`/v1/tasks/${id}/attachments/uploads`, body, { token: t.apiKey, headers: { "idempotency-key": "upload-1" } });
    expect(again.status, again.text).toBe(201);
    expect(again.body).toEqual(first.body);
  });

  it("when registering a key with no uploaded object, another size, or twice, then 400 naming /file_key", async () => {
    const t = await f.tenant();
    const id = await task(t);
    const bytes = randomBytes(1234);
    const s = await start(t, id, { file_name: "x.bin", content_type: "application/octet-stream", size: bytes.length });
    const reg = (size: number) =>
      gw.post(
        `/v1/tasks/${id}/attachments`,
        { file_name: "x.bin", file_key: s.body.file_key, content_type: "application/octet-stream", size },
        { token: t.apiKey },
      );
    const early = await reg(bytes.length);
    expect(early.status, early.text).toBe(400);
    expect(early.body.errors?.[0]?.pointer).toBe("/file_key");
    expect((await put(s.body.upload_url, bytes)).status).toBe(200);
    const wrong = await reg(bytes.length + 1);
    expect(wrong.status, wrong.text).toBe(400);
    expect((await reg(bytes.length)).status).toBe(201);
    const twice = await reg(bytes.length);
    expect(twice.status, twice.text).toBe(400);
    expect(twice.body.errors?.[0]?.pointer).toBe("/file_key");
  });

  it("when another organization names the task or the attachment, then 404; when deleted, then it is gone and its link dead", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const id = await task(t);
    const bytes = randomBytes(10);
    const s = await start(t, id, { file_name: "d.txt", content_type: "text/plain", size: 10 });
    await put(s.body.upload_url, bytes);
    const reg = await gw.post(
      `/v1/tasks/${id}/attachments`,
      { file_name: "d.txt", file_key: s.body.file_key, content_type: "text/plain", size: 10 },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    expect((await start(other, id, { file_name: "e", content_type: "text/plain", size: 1 })).status).toBe(404);
    expect((await gw.get(`/v1/tasks/${id}/attachments`, { token: other.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/tasks/${id}/attachments/${reg.body.id}/download`, { token: other.apiKey })).status).toBe(404);
    expect((await gw.delete(`/v1/tasks/${id}/attachments/${reg.body.id}`, { token: other.apiKey })).status).toBe(404);

    const link = await gw.get(`/v1/tasks/${id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    const del = await gw.delete(`/v1/tasks/${id}/attachments/${reg.body.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: reg.body.id, deleted: true });
    expect((await gw.get(`/v1/tasks/${id}/attachments`, { token: t.apiKey })).body.data).toEqual([]);
    expect((await fetch(link.body.download_url)).status).toBe(404);
  });
});
