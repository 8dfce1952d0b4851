import { randomBytes } from "node:crypto";
import { api, factories, startStack, type StartedStack, gatewayUrl, problemOf } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Issue 12: ticket and link lifetimes, shrunk by their settings so the test need not wait 15 min.
let stack: StartedStack;
let f: ReturnType<typeof factories>;

beforeAll(async () => {
  stack = await startStack({ env: { UPLOAD_TICKET_TTL: "1500ms", DOWNLOAD_LINK_TTL: "1500ms" }, replicas: { gateway: 1, keys: 1, tasks: 1, webhooks: 1 } });
  f = factories(stack);
});

afterAll(async () => {
  await f?.close();
  await stack?.stop();
});

/**
 * Waits until `expiresAt` (an answer's expires_at) has passed, with a margin. A sleep on purpose:
 * a lifetime is checked on two clocks, the tasks service's (the link's signature) and the
 * database's (the ticket and its reservation), and a running stack takes no test clock.
 */
async function pastExpiry(expiresAt: string): Promise<void> {
  const left = Date.parse(expiresAt) + 200 - Date.now();
  if (left > 0) await new Promise((r) => setTimeout(r, left));
}

describe("attachment lifetimes", () => {
  it("when an upload ticket expires, then its link answers 403 link_invalid, it cannot be registered, and its reservation is released", async () => {
    const gw = api(gatewayUrl(stack));
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, storage: 100 });
    const task = await gw.post("/v1/tasks", { title: "expiring" }, { token: t.apiKey });
    const s = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "a", content_type: "text/plain", size: 100 }, { token: t.apiKey });
    expect(s.status, s.text).toBe(201);
    // The whole allowance is reserved by the open ticket.
    const full = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "b", content_type: "text/plain", size: 1 }, { token: t.apiKey });
    expect(full.status, full.text).toBe(400);

    await pastExpiry(s.body.expires_at);
    const put = await fetch(s.body.upload_url, { method: "PUT", body: randomBytes(100), headers: { "content-type": "text/plain" } });
    expect(put.status).toBe(403);
    expect((await problemOf(put)).code).toBe("link_invalid");
    const reg = await gw.post(
      `/v1/tasks/${task.body.id}/attachments`,
      { file_name: "a", file_key: s.body.file_key, content_type: "text/plain", size: 100 },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(400);
    expect(reg.body.errors?.[0]?.pointer).toBe("/file_key");
    const again = await gw.post(
      `/v1/tasks/${task.body.id}/attachments/uploads`,
      { file_name: "c", content_type: "text/plain", size: 100 },
      { token: t.apiKey },
    );
    expect(again.status, again.text).toBe(201);
  });

  it("when a download link expires, then it answers 403 link_invalid and a fresh one works", async () => {
    const gw = api(gatewayUrl(stack));
    const t = await f.tenant();
    const task = await gw.post("/v1/tasks", { title: "download later" }, { token: t.apiKey });
    const s = await gw.post(`/v1/tasks/${task.body.id}/attachments/uploads`, { file_name: "d.txt", content_type: "text/plain", size: 3 }, { token: t.apiKey });
    expect((await fetch(s.body.upload_url, { method: "PUT", body: "abc", headers: { "content-type": "text/plain" } })).status).toBe(200);
    const reg = await gw.post(
      `/v1/tasks/${task.body.id}/attachments`,
      { file_name: "d.txt", file_key: s.body.file_key, content_type: "text/plain", size: 3 },
      { token: t.apiKey },
    );
    expect(reg.status, reg.text).toBe(201);
    const link = await gw.get(`/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    expect(link.status, link.text).toBe(200);
    await pastExpiry(link.body.expires_at);
    expect((await fetch(link.body.download_url)).status).toBe(403);
    const fresh = await gw.get(`/v1/tasks/${task.body.id}/attachments/${reg.body.id}/download`, { token: t.apiKey });
    const dl = await fetch(fresh.body.download_url);
    expect(dl.status).toBe(200);
    expect(await dl.text()).toBe("abc");
  });
});
