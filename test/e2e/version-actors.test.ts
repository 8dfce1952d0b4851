import { randomUUID } from "node:crypto";
import { type Actor, CreatedApiKey, page, Task, TaskVersion } from "@tasksvc/contracts";
import { bodyOf, e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { importFile } from "./import-steps.js";
import { makeClient, tokenFor } from "./oauth-helpers.js";

// Every task version and history item names the credential that wrote it (`actor`): an API key,
// an access token (its user), the service itself (`system`); a batch's items each as their batch's
// credential. Each version also keeps, unserved, the request id and a batch item's batch key, by
// which an undo will find it.
const { gw, f, db } = e2eContext();

const SYSTEM: Actor = { type: "system", id: "system", user_id: null };

async function keyOf(t: Tenant, name: string): Promise<CreatedApiKey> {
  const r = await gw.post("/v1/api-keys", { name, scopes: ["tasks:read", "tasks:write", "projects:read", "projects:write"] }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, CreatedApiKey);
}

/** Oldest first. */
async function historyOf(t: Tenant, id: string): Promise<TaskVersion[]> {
  const r = await gw.get(`/v1/tasks/${id}/history?limit=100`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return [...bodyOf(r, page(TaskVersion)).data].reverse();
}

/** What the versions keep for an undo but do not serve. */
async function kept(versionIds: string[]): Promise<Map<string, { request_id: string | null; batch_key: string | null }>> {
  const rows = await db<{ id: string; request_id: string | null; batch_key: string | null }[]>`
    select id, request_id, batch_key from tasks.task_versions where id = any(${versionIds})`;
  return new Map(rows.map((r) => [r.id, { request_id: r.request_id, batch_key: r.batch_key }]));
}

describe("the actor of task versions", () => {
  it("when an API key creates a task and an access token changes, deletes and restores it, then each version names its credential and request", async () => {
    const t = await f.tenant();
    const key = await keyOf(t, "writer");
    const token = await f.token(t.organizationId, t.userId, ["tasks:read", "tasks:write"]);
    const created = await gw.post("/v1/tasks", { title: "Who wrote me" }, { token: key.key });
    expect(created.status, created.text).toBe(201);
    const task = bodyOf(created, Task);
    const patched = await gw.patch(`/v1/tasks/${task.id}`, { status: "IN_PROGRESS" }, { token });
    expect(patched.status, patched.text).toBe(200);
    expect((await gw.delete(`/v1/tasks/${task.id}`, { token: key.key })).status).toBe(200);
    const restored = await gw.post(`/v1/tasks/${task.id}/restore`, undefined, { token });
    expect(restored.status, restored.text).toBe(200);

    const history = await historyOf(t, task.id);
    const asUser: Actor = { type: "user", id: t.userId, user_id: t.userId };
    expect(history.map((v) => [v.version, v.actor])).toEqual([
      [1, { type: "api_key", id: key.id, user_id: t.userId }],
      [2, asUser],
      [3, asUser],
    ]);
    const stored = await kept(history.map((v) => v.id));
    const requests = [created, patched, restored].map((r) => r.headers.get("x-request-id"));
    expect(requests.every((r) => typeof r === "string" && r.length > 0)).toBe(true);
    expect(history.map((v) => stored.get(v.id))).toEqual(requests.map((request_id) => ({ request_id, batch_key: null })));
  });

  it("when a token of one of the organization's OAuth clients writes, then the version names the client (its id, not its client_id) and the member who created it", async () => {
    const t = await f.tenant();
    const client = await makeClient(gw, t);
    const r = await gw.post("/v1/tasks", { title: "Written by a machine" }, { token: await tokenFor(gw, client) });
    expect(r.status, r.text).toBe(201);
    const [made] = await historyOf(t, bodyOf(r, Task).id);
    expect(made?.actor).toEqual({ type: "oauth_client", id: client.id, user_id: t.userId });
  });

  it("when a batch writes, then each item's version names the batch's credential, and keeps the batch's Idempotency-Key", async () => {
    const t = await f.tenant();
    const key = await keyOf(t, "batcher");
    const existing = bodyOf(await gw.post("/v1/tasks", { title: "Before the batch" }, { token: t.apiKey }), Task);
    const batchKey = randomUUID();
    const operations = [
      { method: "create", body: { title: "Made in a batch" } },
      { method: "update", task_id: existing.id, body: { title: "Changed in a batch" } },
    ];
    const r = await gw.post("/v1/tasks/batch", { operations }, { token: key.key, headers: { "idempotency-key": batchKey } });
    expect(r.status, r.text).toBe(200);
    const made = r.body.results[0].body.id as string;
    const actor: Actor = { type: "api_key", id: key.id, user_id: t.userId };
    const [first] = await historyOf(t, made);
    const [, second] = await historyOf(t, existing.id);
    expect([first?.actor, second?.actor]).toEqual([actor, actor]);
    const stored = await kept([first?.id ?? "", second?.id ?? ""]);
    const request_id = r.headers.get("x-request-id");
    expect([...stored.values()]).toEqual([
      { request_id, batch_key: batchKey },
      { request_id, batch_key: batchKey },
    ]);

    // The task made before the batch was the bootstrap key's, by a single request: no batch key.
    const [before] = await historyOf(t, existing.id);
    expect(before?.actor).toMatchObject({ type: "api_key", user_id: t.userId });
    expect(before?.actor?.id).not.toBe(key.id);
    expect((await kept([before?.id ?? ""])).get(before?.id ?? "")?.batch_key).toBeNull();
  });

  it("when the service writes on its own (a recurring task's next occurrence, a deleted label taken off), then the version's actor is the system", async () => {
    const t = await f.tenant();
    const label = await gw.post("/v1/labels", { name: "Going away" }, { token: t.apiKey });
    expect(label.status, label.text).toBe(201);
    const today = new Date().toISOString().slice(0, 10);
    const head = bodyOf(
      await gw.post("/v1/tasks", { title: "Daily", recurrence: { frequency: "DAILY", start_date: today }, label_ids: [label.body.id] }, { token: t.apiKey }),
      Task,
    );
    // Completing the series' only task makes its next occurrence at once (if a tick has not already).
    expect((await gw.patch(`/v1/tasks/${head.id}`, { status: "COMPLETED" }, { token: t.apiKey })).status).toBe(200);
    const occurrence = await eventually(
      async () => bodyOf(await gw.get(`/v1/tasks?series_task_id=${head.id}`, { token: t.apiKey }), page(Task)).data[0] ?? false,
      { what: "the next occurrence" },
    );
    const made = await historyOf(t, occurrence.id);
    expect(made.map((v) => v.actor)).toEqual([SYSTEM]);
    expect([...(await kept(made.map((v) => v.id))).values()]).toEqual([{ request_id: null, batch_key: null }]);

    expect((await gw.delete(`/v1/labels/${label.body.id}`, { token: t.apiKey })).status).toBe(200);
    const stripped = await eventually(
      async () => {
        const h = await historyOf(t, head.id);
        return h.length === 3 ? h : false;
      },
      { what: "the label taken off the task" },
    );
    expect(stripped.map((v) => v.actor?.type)).toEqual(["api_key", "api_key", "system"]);
    expect(stripped[2]?.actor).toEqual(SYSTEM);
    expect([...(await kept([stripped[2]?.id ?? ""])).values()]).toEqual([{ request_id: null, batch_key: null }]);
  });

  it("when a file is imported with an access token, then each imported task's version names that token's user and the import's request", async () => {
    const t = await f.tenant();
    const token = await f.token(t.organizationId, t.userId, ["tasks:read", "tasks:write", "projects:read", "projects:write"]);
    const done = await importFile(gw, t, "title,status\nImported one,TODO\nImported two,IN_PROGRESS\n", { token });
    expect(done).toMatchObject({ status: "succeeded", counts: { created: 2, failed: 0 } });
    const tasks = bodyOf(await gw.get("/v1/tasks", { token: t.apiKey }), page(Task)).data;
    expect(tasks).toHaveLength(2);
    const versions = (await Promise.all(tasks.map((x) => historyOf(t, x.id)))).flat();
    expect(versions.map((v) => v.actor)).toEqual([
      { type: "user", id: t.userId, user_id: t.userId },
      { type: "user", id: t.userId, user_id: t.userId },
    ]);
    const [started] = await db<{ request_id: string }[]>`select request_id from tasks.imports where id = ${done.id}`;
    expect(started?.request_id).toEqual(expect.any(String));
    expect([...(await kept(versions.map((v) => v.id))).values()]).toEqual(versions.map(() => ({ request_id: started?.request_id, batch_key: null })));
  });
});
