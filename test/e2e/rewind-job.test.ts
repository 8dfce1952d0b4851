import { randomUUID } from "node:crypto";
import { CreatedApiKey, page, Rewind, Task } from "@tasksvc/contracts";
import { bodyOf, e2eContext, eventually } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// An undo of more tasks than a request does inline runs as a job on the work queue: the answer
// says running, and the rewind is polled until it succeeded, every task done once.
const { gw, f } = e2eContext();

describe("a large rewind", () => {
  it("when the match covers more tasks than run inline, then 202 running, and the job undoes every one of them", async () => {
    const t = await f.tenant();
    const key = await gw.post("/v1/api-keys", { name: "agent", scopes: ["tasks:read", "tasks:write"] }, { token: t.apiKey });
    expect(key.status, key.text).toBe(201);
    const agent = bodyOf(key, CreatedApiKey);
    const since = new Date(Date.now() - 1000).toISOString();
    const kept = bodyOf(await gw.post("/v1/tasks", { title: "kept" }, { token: t.apiKey }), Task);
    // 111 writes of the agent: past the inline bound of 100, within its burst of 120 a minute.
    for (const n of [55, 55]) {
      const operations = Array.from({ length: n }, (_, i) => ({ method: "create", body: { title: `made ${i}` } }));
      const r = await gw.post("/v1/tasks/batch", { operations }, { token: agent.key, headers: { "idempotency-key": randomUUID() } });
      expect(r.status, r.text).toBe(200);
    }
    const changed = await gw.patch(`/v1/tasks/${kept.id}`, { status: "COMPLETED" }, { token: agent.key });
    expect(changed.status, changed.text).toBe(200);

    const r = await gw.post(
      "/v1/rewinds",
      { match: { credential_id: agent.id, since }, dry_run: false },
      { token: t.apiKey, headers: { "idempotency-key": randomUUID() } },
    );
    expect(r.status, r.text).toBe(202);
    const started = bodyOf(r, Rewind);
    expect(started).toMatchObject({ status: "running", dry_run: false, completed_at: null });

    const done = await eventually(
      async () => {
        const g = bodyOf(await gw.get(`/v1/rewinds/${started.id}`, { token: t.apiKey }), Rewind);
        return g.status === "succeeded" ? g : false;
      },
      { what: "the rewind's job", timeoutMs: 60_000, intervalMs: 200 },
    );
    expect(done.counts).toEqual({ reverted: 1, trashed: 110, skipped: 0 });
    expect(done.items).toHaveLength(111);
    expect(done.completed_at).not.toBeNull();
    const left = bodyOf(await gw.get("/v1/tasks?limit=100", { token: t.apiKey }), page(Task));
    expect(left.data.map((x) => [x.id, x.status])).toEqual([[kept.id, "TODO"]]);
    const trash = await gw.get("/v1/trash?limit=100", { token: t.apiKey });
    expect(trash.body.has_more).toBe(true);
  });
});
