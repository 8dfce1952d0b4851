import { createHash, randomBytes } from "node:crypto";
import { api, factories, startS3Server, startStack, type S3Server, type StartedStack, gatewayUrl } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 12 with BLOB_STORE=s3://…: the same two phases against a real S3-API server (s3rver)
// started here; upload and download links are presigned S3 URLs the client uses directly.
let s3: S3Server;
let stack: StartedStack;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  s3 = await startS3Server("attachments");
  // The standard AWS variables, as in production (this file's worker has its own environment).
  process.env["AWS_ACCESS_KEY_ID"] = s3.credentials.accessKeyId;
  process.env["AWS_SECRET_ACCESS_KEY"] = s3.credentials.secretAccessKey;
  stack = await startStack({ env: { BLOB_STORE: s3.blobStoreUrl }, replicas: { gateway: 1, keys: 1, tasks: 1, webhooks: 1 } });
  f = factories(stack);
});

afterAll(async () => {
  await f?.close();
  await stack?.stop();
  await s3?.stop();
});

const sha = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

describe("attachments, two phases, S3 store", () => {
  it("when a file is started, PUT to the presigned URL and registered, then its download link is presigned too and answers exactly its bytes", async () => {
    const gw = api(gatewayUrl(stack));
    const t = await f.tenant();
    const created = await gw.post("/v1/tasks", { title: "s3 files" }, { token: t.apiKey });
    const id = created.body.id;
    const bytes = randomBytes(2 * 1024 * 1024 + 3);
    const s = await gw.post(
      `/v1/tasks/${id}/attachments/uploads`,
      { file_name: "résumé.pdf", content_type: "application/pdf", size: bytes.length },
      { token: t.apiKey },
    );
    expect(s.status, s.text).toBe(201);
    expect(s.body.upload_url.startsWith(`${s3.endpoint}/${s3.bucket}/`)).toBe(true);
    expect(s.body.upload_url).toContain("X-Amz-Signature=");

    const up = await fetch(s.body.upload_url, { method: "PUT", body: bytes, headers: { "content-type": "application/pdf" } });
    expect(up.status, await up.text()).toBe(200);

    const reg = await gw.post(
      `/v1/tasks/${id}/attachments`,
      { file_name: "résumé.pdf", file_key: s.body.file_key, content_type: "application/pdf", size: bytes.length },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    const link = await gw.get(`/v1/tasks/${id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    expect(link.status, link.text).toBe(200);
    expect(link.body.download_url.startsWith(s3.endpoint)).toBe(true);
    const dl = await fetch(link.body.download_url);
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-type")).toBe("application/pdf");
    expect(dl.headers.get("content-disposition")).toContain("filename*=UTF-8''r%C3%A9sum%C3%A9.pdf");
    expect(sha(new Uint8Array(await dl.arrayBuffer()))).toBe(sha(bytes));

    // Registered with no object, or of another size: refused, as with the JetStream store.
    const s2 = await gw.post(`/v1/tasks/${id}/attachments/uploads`, { file_name: "n.txt", content_type: "text/plain", size: 5 }, { token: t.apiKey });
    const early = await gw.post(
      `/v1/tasks/${id}/attachments`,
      { file_name: "n.txt", file_key: s2.body.file_key, content_type: "text/plain", size: 5 },
      { token: t.apiKey },
    );
    expect(early.status, early.text).toBe(400);
    expect(early.body.errors?.[0]?.pointer).toBe("/file_key");

    const del = await gw.delete(`/v1/tasks/${id}/attachments/${reg.body.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect((await fetch(link.body.download_url)).status).toBe(404);
  });
});
