import { e2eContext, gatewayUrl, bodyOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { Task } from "@tasksvc/contracts";

// Every answer carries `X-Content-Type-Options: nosniff` (a browser never runs or renders a body
// as a type other than the one sent), and every answer that is not the documentation's fixed
// files carries `Cache-Control: no-store`: a shared cache (a proxy, a CDN) or a browser keeps no
// organization's data and no answer about a credential.
const { stack, gw, f } = e2eContext();
const base = gatewayUrl(stack);

interface Seen {
  what: string;
  status: number;
  nosniff: string | null;
  cacheControl: string | null;
}

const seen = (what: string, r: { status: number; headers: Headers }): Seen => ({
  what,
  status: r.status,
  nosniff: r.headers.get("x-content-type-options"),
  cacheControl: r.headers.get("cache-control"),
});

describe("headers on every answer", () => {
  it("when the API answers a tenant, with success or failure, then nosniff and no-store", async () => {
    const t = await f.tenant();
    const auth = { token: t.apiKey };
    const created = await gw.post("/v1/tasks", { title: "cache me not" }, auth);
    expect(created.status, created.text).toBe(201);
    const id = bodyOf(created, Task).id;
    const once = { ...auth, headers: { "idempotency-key": `headers-${id}` } };
    const answers: Seen[] = [
      seen("create", created),
      seen("read", await gw.get(`/v1/tasks/${id}`, auth)),
      seen("head", await gw.request("HEAD", `/v1/tasks/${id}`, auth)),
      seen("list", await gw.get("/v1/tasks?limit=1", auth)),
      seen("organizations", await gw.get("/v1/organizations", auth)),
      seen("usage", await gw.get("/v1/usage", auth)),
      seen("update", await gw.patch(`/v1/tasks/${id}`, { title: "still not" }, auth)),
      seen("first with a key", await gw.post("/v1/tasks", { title: "keyed" }, once)),
      seen("replayed", await gw.post("/v1/tasks", { title: "keyed" }, once)),
      seen("unknown task", await gw.get("/v1/tasks/T-999999", auth)),
      seen("invalid input", await gw.post("/v1/tasks", { title: "" }, auth)),
      seen("no credential", await gw.get("/v1/tasks")),
      seen("bad credential", await gw.get("/v1/tasks", { token: "svc_live_notAKey000000000000000000000000000000" })),
    ];
    for (const a of answers) expect(a, a.what).toMatchObject({ nosniff: "nosniff", cacheControl: "no-store" });
    expect(answers.find((a) => a.what === "replayed")?.status).toBe(201);
  });

  it("when upload and download links are used or refused, then nosniff and no-store", async () => {
    const t = await f.tenant();
    const auth = { token: t.apiKey };
    const task = await gw.post("/v1/tasks", { title: "with a file" }, auth);
    const started = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "a.txt", content_type: "text/plain", size: 3 }, auth);
    expect(started.status, started.text).toBe(201);
    const put = await fetch(started.body.upload_url, { method: "PUT", body: "abc", headers: { "content-type": "text/plain" } });
    const reg = await gw.post(
      `/v1/tasks/${task.body.id}/attachments`,
      { file_name: "a.txt", file_key: started.body.file_key, content_type: "text/plain", size: 3 },
      auth,
    );
    const link = await gw.get(`/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, auth);
    const download = await fetch(link.body.download_url);
    const answers = [
      seen("upload", put),
      seen("download link", link),
      seen("download", download),
      seen("refused link", await fetch(`${base}/v1/downloads/${"A".repeat(40)}.${"B".repeat(40)}`)),
    ];
    expect(answers.map((a) => `${a.what} ${a.status}`)).toEqual(["upload 200", "download link 200", "download 200", "refused link 403"]);
    for (const a of answers) {
      expect(a.nosniff, a.what).toBe("nosniff");
      expect(
        a.cacheControl?.split(",").map((d) => d.trim()),
        a.what,
      ).toContain("no-store");
    }
  });

  it("when anonymous pages, documents, probes and unknown routes answer, then nosniff, and no-store except the documentation's fixed files and the OpenAPI document", async () => {
    const get = async (path: string, init?: RequestInit) => seen(path, await fetch(`${base}${path}`, init));
    const answers = [
      await get("/docs"),
      await get("/docs/errors"),
      await get("/v1/openapi.json"),
      await get("/healthz"),
      await get("/readyz"),
      await get("/v1/nothing-here"),
      await get("/v1/tasks", { method: "PUT" }),
      await get("/v1/%zz"),
      await get("/docs/assets/nothing.js"),
    ];
    expect(answers.map((a) => `${a.what} ${a.status}`)).toEqual([
      "/docs 200",
      "/docs/errors 200",
      "/v1/openapi.json 200",
      "/healthz 200",
      "/readyz 200",
      "/v1/nothing-here 404",
      "/v1/tasks 405",
      "/v1/%zz 400",
      "/docs/assets/nothing.js 404",
    ]);
    for (const a of answers.filter((a) => a.what !== "/v1/openapi.json")) expect(a, a.what).toMatchObject({ nosniff: "nosniff", cacheControl: "no-store" });
    // The OpenAPI document is public, the same for everyone and versioned by its ETag: clients
    // and shared caches may keep it a while and revalidate it (If-None-Match, 304) after.
    expect(answers.find((a) => a.what === "/v1/openapi.json")).toMatchObject({ nosniff: "nosniff", cacheControl: "public, max-age=300" });
    // The reference UI's files are the same for everyone until the next release: cacheable.
    const asset = await get("/docs/assets/swagger-ui.css");
    expect(asset).toMatchObject({ status: 200, nosniff: "nosniff", cacheControl: "public, max-age=3600" });
  });
});
