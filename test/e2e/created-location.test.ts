import { randomUUID } from "node:crypto";
import { type ApiResponse, awayFromWindowEdge, e2eContext, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// A 201 says where the created resource is (Location, an absolute path), on the first answer and
// on an Idempotency-Key replay alike; a replay, which costs nothing, still carries the rate-limit
// headers the operation's answers carry, with the counters as they stand.
const { gw, f } = e2eContext();

const auth = (t: Tenant, key?: string) => ({ token: t.apiKey, headers: key === undefined ? {} : ({ "idempotency-key": key } as Record<string, string>) });

/** The answer's Location, which must be an absolute path (no scheme, no host). */
function locationOf(r: ApiResponse): string {
  expect(r.status, r.text).toBe(201);
  const location = r.headers.get("location") ?? "";
  expect(location, r.text).toMatch(/^\/v1\//);
  return location;
}

const RATE_HEADERS = ["ratelimit-policy", "ratelimit", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"];
const rateHeadersOf = (r: ApiResponse) => Object.fromEntries(RATE_HEADERS.map((h) => [h, r.headers.get(h)]));

describe("Location on a 201", () => {
  it("when a task, project, webhook endpoint or API key is created, then Location is its path, and reading it answers the same resource", async () => {
    const t = await f.tenant("pro");
    const task = await gw.post("/v1/tasks", { title: "Where am I" }, auth(t));
    expect(locationOf(task)).toBe(`/v1/tasks/${task.body.id}`);
    const project = await gw.post("/v1/projects", { name: "Located" }, auth(t));
    expect(locationOf(project)).toBe(`/v1/projects/${project.body.id}`);
    const endpoint = await gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/located" }, auth(t));
    expect(locationOf(endpoint)).toBe(`/v1/webhook-endpoints/${endpoint.body.id}`);
    for (const created of [task, project, endpoint]) {
      const read = await gw.get(locationOf(created), auth(t));
      expect(read.status, read.text).toBe(200);
      expect(read.body.id).toBe(created.body.id);
    }
    // An API key has no read of its own: its path is where it is revoked.
    const key = await gw.post("/v1/api-keys", { name: "located" }, auth(t));
    expect(locationOf(key)).toBe(`/v1/api-keys/${key.body.id}`);
    const revoked = await gw.delete(locationOf(key), auth(t));
    expect(revoked.status, revoked.text).toBe(200);
  });

  it("when a dependency, a board entry or an attachment is created, then Location is the path that removes it; an existing dependency's 200 has none", async () => {
    const t = await f.tenant();
    const a = await gw.post("/v1/tasks", { title: "a" }, auth(t));
    const b = await gw.post("/v1/tasks", { title: "b" }, auth(t));
    // The blocker named by its number alone: Location names it as the request did, a path that works.
    const number = String(b.body.id).replace("T-", "");
    const linked = await gw.post(`/v1/tasks/${a.body.id}/dependencies`, { blocker_task_id: number }, auth(t));
    expect(locationOf(linked)).toBe(`/v1/tasks/${a.body.id}/dependencies/${number}`);
    const again = await gw.post(`/v1/tasks/${a.body.id}/dependencies`, { blocker_task_id: b.body.id }, auth(t));
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get("location")).toBeNull();

    const entry = await gw.post("/v1/daily-plan/entries", { date: "2026-11-23", task_id: a.body.id, section: "TODO" }, auth(t));
    expect(locationOf(entry)).toBe(`/v1/daily-plan/entries/${entry.body.id}`);

    const ticket = await gw.post(`/v1/tasks/${a.body.id}/attachments/uploads`, { file_name: "a.txt", content_type: "text/plain", size: 3 }, auth(t));
    expect(ticket.status, ticket.text).toBe(201);
    // The upload's link is a capability: it is in the body only, never repeated in a header.
    expect(ticket.headers.get("location")).toBeNull();
    expect((await fetch(ticket.body.upload_url, { method: "PUT", body: "abc", headers: { "content-type": "text/plain" } })).status).toBe(200);
    const file = await gw.post(
      `/v1/tasks/${a.body.id}/attachments`,
      { file_name: "a.txt", file_key: ticket.body.file_key, content_type: "text/plain", size: 3 },
      auth(t),
    );
    expect(locationOf(file)).toBe(`/v1/tasks/${a.body.id}/attachments/${file.body.id}`);

    for (const created of [linked, entry, file]) {
      const removed = await gw.delete(locationOf(created), auth(t));
      expect(removed.status, `${locationOf(created)}: ${removed.text}`).toBe(200);
    }
  });
});

describe("an Idempotency-Key replay", () => {
  it("when a create is replayed from the stored answer, then it carries the same Location, and rate-limit headers that show it cost nothing", async () => {
    const t = await f.tenant();
    await awayFromWindowEdge();
    const key = randomUUID();
    const first = await gw.post("/v1/tasks", { title: "Once" }, auth(t, key));
    const replay = await gw.post("/v1/tasks", { title: "Once" }, auth(t, key));
    expect(replay.status, replay.text).toBe(201);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    expect(replay.headers.get("location")).toBe(locationOf(first));
    expect(replay.body.id).toBe(first.body.id);
    // The same counters as the first answer left them: nothing else was counted meanwhile.
    expect(rateHeadersOf(replay)).toEqual({ ...rateHeadersOf(first), ratelimit: expect.stringMatching(/^"burst";r=\d+;t=\d+$/) });
    expect(replay.headers.get("x-ratelimit-remaining")).toBe(first.headers.get("x-ratelimit-remaining"));
  });

  it("when a create whose answer holds a secret is replayed (asked of the service again), then Location and rate-limit headers come with it too", async () => {
    const t = await f.tenant("pro");
    await awayFromWindowEdge();
    for (const [path, body] of [
      ["/v1/api-keys", { name: "replayed" }],
      ["/v1/webhook-endpoints", { url: "https://hooks.example.com/replayed" }],
    ] as const) {
      const key = randomUUID();
      const first = await gw.post(path, body, auth(t, key));
      const replay = await gw.post(path, body, auth(t, key));
      expect(replay.status, replay.text).toBe(201);
      expect(replay.headers.get("idempotency-replayed"), path).toBe("true");
      expect(replay.headers.get("location"), path).toBe(locationOf(first));
      for (const h of RATE_HEADERS) expect(replay.headers.get(h), `${path} ${h}`).not.toBeNull();
      expect(replay.headers.get("x-ratelimit-remaining"), path).toBe(first.headers.get("x-ratelimit-remaining"));
    }
  });

  it("when a refused create (a stored 400) is replayed, then the replay carries the rate-limit headers too", async () => {
    const t = await f.tenant();
    const key = randomUUID();
    const first = await gw.post("/v1/tasks", { title: "" }, auth(t, key));
    expect(first.status, first.text).toBe(400);
    const replay = await gw.post("/v1/tasks", { title: "" }, auth(t, key));
    expect(replay.status, replay.text).toBe(400);
    expect(replay.headers.get("idempotency-replayed")).toBe("true");
    for (const h of RATE_HEADERS) expect(replay.headers.get(h), h).not.toBeNull();
  });
});
