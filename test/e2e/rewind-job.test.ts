import { randomUUID } from "node:crypto";
import { CreatedApiKey, page, Rewind, Task } from "@tasksvc/contracts";
import { bodyOf, e2eContext, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, describe, expect, it } from "vitest";

// An undo of more tasks than a request does inline runs as a job on the work queue: the answer
// says running, and the rewind is polled until it succeeded, every task done once.
const { gw, f, stack } = e2eContext();
const db = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
afterAll(() => db.end({ timeout: 5 }));

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

  it("when an organization already has three rewinds running, then a fourth that needs a job is refused 409 limit_reached and changes nothing, while a dry run goes on, and once one has finished a job is taken again", async () => {
    const t = await f.tenant();
    const key = await gw.post("/v1/api-keys", { name: "agent", scopes: ["tasks:read", "tasks:write"] }, { token: t.apiKey });
    const agent = bodyOf(key, CreatedApiKey);
    const since = new Date(Date.now() - 1000).toISOString();
    for (const n of [51, 50]) {
      const operations = Array.from({ length: n }, (_, i) => ({ method: "create", body: { title: `made ${i}` } }));
      const made = await gw.post("/v1/tasks/batch", { operations }, { token: agent.key, headers: { "idempotency-key": randomUUID() } });
      expect(made.status, made.text).toBe(200);
    }
    // Three of the organization's rewinds mid-run (as jobs on other replicas would hold them), leased an hour.
    const running = [1, 2, 3].map((i) => `rwd_held_${i}_${randomUUID().slice(0, 8)}`);
    for (const id of running)
      await db`insert into tasks.rewinds (id, organization_id, requested_by, credential_id, since, until, dry_run, status, lease_until)
        values (${id}, ${t.organizationId}, ${t.userId}, ${"key_none"}, now() - interval '1 hour', now(), false, 'running', now() + interval '1 hour')`;
    const rewind = (tenant: typeof t, dryRun: boolean) =>
      gw.post(
        "/v1/rewinds",
        { match: { credential_id: agent.id, since }, dry_run: dryRun },
        { token: tenant.apiKey, headers: { "idempotency-key": randomUUID() } },
      );
    const refused = await rewind(t, false);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({ code: "limit_reached", detail: expect.stringContaining("3 rewinds running") });
    expect((await gw.get("/v1/tasks?limit=1", { token: t.apiKey })).body.data[0].title).toMatch(/^made /);
    expect((await rewind(t, true)).status).toBe(200);
    await db`update tasks.rewinds set status = 'succeeded', completed_at = now(), lease_until = null where id = ${running[0] as string}`;
    const accepted = await rewind(t, false);
    expect(accepted.status, accepted.text).toBe(202);
    await db`update tasks.rewinds set status = 'succeeded', completed_at = now(), lease_until = null where id in ${db(running)}`;
  });
});
