import { randomUUID } from "node:crypto";
import { CreatedApiKey, page, Rewind, Task, TaskVersion } from "@tasksvc/contracts";
import { bodyOf, e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Undo by credential, request or batch: a dry run plans and changes nothing; the undo writes a new
// version per task restoring exactly the fields the matching writes changed, leaves a field a
// later write of someone else changed, trashes what the matching writes created, and applied again
// changes nothing. Other organizations' ids match nothing.
const { gw, f } = e2eContext();

async function agentOf(t: Tenant): Promise<CreatedApiKey> {
  const r = await gw.post("/v1/api-keys", { name: "agent", scopes: ["tasks:read", "tasks:write"] }, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, CreatedApiKey);
}

async function make(token: string, body: Record<string, unknown>): Promise<Task> {
  const r = await gw.post("/v1/tasks", body, { token });
  expect(r.status, r.text).toBe(201);
  return bodyOf(r, Task);
}

async function patch(token: string, id: string, body: Record<string, unknown>): Promise<Task> {
  const r = await gw.patch(`/v1/tasks/${id}`, body, { token });
  expect(r.status, r.text).toBe(200);
  return bodyOf(r, Task);
}

async function rewind(t: Tenant, body: unknown, key = randomUUID()) {
  return gw.post("/v1/rewinds", body, { token: t.apiKey, headers: { "idempotency-key": key } });
}

const get = async (t: Tenant, id: string) => gw.get(`/v1/tasks/${id}`, { token: t.apiKey });

describe("a rewind of one credential's writes", () => {
  it("when an agent's writes are mixed with a person's, then a dry run plans, and the undo restores exactly the agent's changes and skips the conflicting ones", async () => {
    const t = await f.tenant();
    const agent = await agentOf(t);
    const since = new Date(Date.now() - 1000).toISOString();
    // x: the agent changes status, priority and title; the person changes priority after it.
    const x = await make(t.apiKey, { title: "x", priority: "LOW" });
    await patch(agent.key, x.id, { status: "IN_PROGRESS", priority: "HIGH" });
    await patch(t.apiKey, x.id, { priority: "URGENT" });
    const xNow = await patch(agent.key, x.id, { title: "x by the agent" });
    // y: the agent completes it, the person sets it back to blocked: nothing left to restore.
    const y = await make(t.apiKey, { title: "y" });
    await patch(agent.key, y.id, { status: "COMPLETED" });
    const yNow = await patch(t.apiKey, y.id, { status: "BLOCKED" });
    // z: made by the agent alone; w: made by the agent, then changed by the person.
    const z = await make(agent.key, { title: "z" });
    const w = await make(agent.key, { title: "w" });
    const wNow = await patch(t.apiKey, w.id, { title: "w kept" });
    // v: the person's alone.
    const v = await make(t.apiKey, { title: "v" });
    const match = { credential_id: agent.id, since };

    const dry = await rewind(t, { match });
    expect(dry.status, dry.text).toBe(200);
    const plan = bodyOf(dry, Rewind);
    expect(plan).toMatchObject({ status: "succeeded", dry_run: true, counts: { reverted: 1, trashed: 1, skipped: 2 }, items_truncated: false });
    expect(plan.items).toEqual([
      {
        task_id: x.id,
        action: "revert",
        reason: null,
        from_version: xNow.version,
        to_version: null,
        changes: { title: { from: "x by the agent", to: "x" }, status: { from: "IN_PROGRESS", to: "TODO" } },
      },
      { task_id: y.id, action: "skip", reason: "changed_since", from_version: yNow.version, to_version: null, changes: {} },
      { task_id: z.id, action: "trash", reason: null, from_version: z.version, to_version: null, changes: {} },
      { task_id: w.id, action: "skip", reason: "changed_since", from_version: wNow.version, to_version: null, changes: {} },
    ]);
    // The dry run changed nothing, and it can be read again by its id.
    expect(bodyOf(await get(t, x.id), Task)).toEqual(xNow);
    expect((await get(t, z.id)).status).toBe(200);
    const again = await gw.get(`/v1/rewinds/${plan.id}`, { token: t.apiKey });
    expect(bodyOf(again, Rewind)).toEqual(plan);

    const applied = await rewind(t, { match, dry_run: false });
    expect(applied.status, applied.text).toBe(202);
    const done = bodyOf(applied, Rewind);
    expect(done).toMatchObject({ status: "succeeded", dry_run: false, counts: { reverted: 1, trashed: 1, skipped: 2 } });
    expect(done.items.map((i) => [i.task_id, i.action, i.to_version])).toEqual([
      [x.id, "revert", xNow.version + 1],
      [y.id, "skip", null],
      [z.id, "trash", null],
      [w.id, "skip", null],
    ]);
    const xAfter = bodyOf(await get(t, x.id), Task);
    expect(xAfter).toMatchObject({ title: "x", status: "TODO", priority: "URGENT", version: xNow.version + 1 });
    expect(bodyOf(await get(t, y.id), Task)).toEqual(yNow);
    expect(bodyOf(await get(t, w.id), Task)).toEqual(wNow);
    expect(bodyOf(await get(t, v.id), Task)).toEqual(v);
    expect((await get(t, z.id)).status).toBe(404);
    const trash = await gw.get("/v1/trash", { token: t.apiKey });
    expect(trash.body.data.map((i: { id: string }) => i.id)).toEqual([z.id]);

    // The undo's version names the rewind, and its task.updated event carries rewind_id.
    const history = bodyOf(await gw.get(`/v1/tasks/${x.id}/history?limit=1`, { token: t.apiKey }), page(TaskVersion));
    expect(history.data[0]?.actor).toEqual({ type: "rewind", id: done.id, user_id: t.userId });
    const event = await eventually(async () => {
      const r = await gw.get(`/v1/events?type=task.updated&task_id=${x.id}&limit=1`, { token: t.apiKey });
      const e = r.body.data?.[0];
      return e?.data?.version === xAfter.version ? e : false;
    });
    expect(event).toMatchObject({ rewind_id: done.id, changes: { title: { from: "x by the agent", to: "x" }, status: { from: "IN_PROGRESS", to: "TODO" } } });
    const deleted = await gw.get(`/v1/events?type=task.deleted&task_id=${z.id}`, { token: t.apiKey });
    expect(deleted.body.data).toHaveLength(1);

    // Applied again (a new rewind with the same match): nothing is left to revert, nothing changes.
    const second = await rewind(t, { match, dry_run: false });
    expect(second.status, second.text).toBe(202);
    expect(bodyOf(second, Rewind)).toMatchObject({ counts: { reverted: 0, trashed: 0, skipped: 4 } });
    expect(bodyOf(second, Rewind).items.map((i) => [i.task_id, i.reason])).toEqual([
      [x.id, "changed_since"],
      [y.id, "changed_since"],
      [z.id, "in_trash"],
      [w.id, "changed_since"],
    ]);
    expect(bodyOf(await get(t, x.id), Task)).toEqual(xAfter);
  });

  it("when the same Idempotency-Key is sent again, then the first answer is replayed and nothing runs again", async () => {
    const t = await f.tenant();
    const agent = await agentOf(t);
    const since = new Date(Date.now() - 1000).toISOString();
    const x = await make(t.apiKey, { title: "before" });
    await patch(agent.key, x.id, { title: "after" });
    const key = randomUUID();
    const body = { match: { credential_id: agent.id, since }, dry_run: false };
    const first = await rewind(t, body, key);
    expect(first.status, first.text).toBe(202);
    const restored = bodyOf(await get(t, x.id), Task);
    expect(restored.title).toBe("before");
    // The agent writes again; a replay must not undo it.
    const later = await patch(agent.key, x.id, { title: "after again" });
    const replay = await rewind(t, body, key);
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body).toEqual(first.body);
    expect(bodyOf(await get(t, x.id), Task)).toEqual(later);
  });

  it("when the match names a request or a batch, then only that request's or batch's writes are undone", async () => {
    const t = await f.tenant();
    const since = new Date(Date.now() - 1000).toISOString();
    const a = await make(t.apiKey, { title: "a" });
    const b = await make(t.apiKey, { title: "b" });
    const one = await gw.patch(`/v1/tasks/${a.id}`, { status: "COMPLETED" }, { token: t.apiKey });
    expect(one.status, one.text).toBe(200);
    const requestId = one.headers.get("x-request-id") ?? "";
    await patch(t.apiKey, b.id, { status: "COMPLETED" });
    const batchKey = randomUUID();
    const batch = await gw.post(
      "/v1/tasks/batch",
      {
        operations: [
          { method: "update", task_id: b.id, body: { title: "b in a batch" } },
          { method: "create", body: { title: "c" } },
        ],
      },
      { token: t.apiKey, headers: { "idempotency-key": batchKey } },
    );
    expect(batch.status, batch.text).toBe(200);
    const c = batch.body.results[1].body.id as string;

    const byRequest = await rewind(t, { match: { request_id: requestId, since }, dry_run: false });
    expect(bodyOf(byRequest, Rewind).counts).toEqual({ reverted: 1, trashed: 0, skipped: 0 });
    expect(bodyOf(await get(t, a.id), Task).status).toBe("TODO");
    expect(bodyOf(await get(t, b.id), Task).status).toBe("COMPLETED");

    const byBatch = await rewind(t, { match: { batch_key: batchKey, since }, dry_run: false });
    expect(bodyOf(byBatch, Rewind).counts).toEqual({ reverted: 1, trashed: 1, skipped: 0 });
    expect(bodyOf(await get(t, b.id), Task)).toMatchObject({ title: "b", status: "COMPLETED" });
    expect((await get(t, c)).status).toBe(404);
  });

  it("when the agent made a task someone else then put a subtask under, then that task is skipped; a tree the agent made alone goes to the trash", async () => {
    const t = await f.tenant();
    const agent = await agentOf(t);
    const since = new Date(Date.now() - 1000).toISOString();
    const shared = await make(agent.key, { title: "shared parent" });
    const theirs = await make(t.apiKey, { title: "their subtask", parent_task_id: shared.id });
    const parent = await make(agent.key, { title: "agent's parent" });
    const child = await make(agent.key, { title: "agent's subtask", parent_task_id: parent.id });
    const r = await rewind(t, { match: { credential_id: agent.id, since }, dry_run: false });
    expect(r.status, r.text).toBe(202);
    expect(bodyOf(r, Rewind).items.map((i) => [i.task_id, i.action, i.reason])).toEqual([
      [shared.id, "skip", "has_subtasks"],
      [parent.id, "trash", null],
      [child.id, "trash", null],
    ]);
    expect((await get(t, shared.id)).status).toBe(200);
    expect((await get(t, theirs.id)).status).toBe(200);
    for (const id of [parent.id, child.id]) expect((await get(t, id)).status).toBe(404);
    const deleted = await gw.get(`/v1/events?type=task.deleted`, { token: t.apiKey });
    expect(deleted.body.data.map((e: { data: { id: string } }) => e.data.id).sort()).toEqual([parent.id, child.id].sort());
  });

  it("when another organization's credential, request or batch is named, then nothing matches and nothing changes", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const agent = await agentOf(t);
    const since = new Date(Date.now() - 1000).toISOString();
    const x = await make(agent.key, { title: "x" });
    const changed = await gw.patch(`/v1/tasks/${x.id}`, { title: "y" }, { token: agent.key });
    const requestId = changed.headers.get("x-request-id") ?? "";
    for (const match of [{ credential_id: agent.id }, { request_id: requestId }, { credential_id: "key_unknown" }, { batch_key: "no-such-batch" }]) {
      const r = await rewind(other, { match: { ...match, since }, dry_run: false });
      expect(r.status, r.text).toBe(202);
      expect(bodyOf(r, Rewind)).toMatchObject({ items: [], counts: { reverted: 0, trashed: 0, skipped: 0 } });
    }
    expect(bodyOf(await get(t, x.id), Task).title).toBe("y");
    const unknown = await gw.get(`/v1/rewinds/rwd_unknown`, { token: t.apiKey });
    expect([unknown.status, unknown.body.code]).toEqual([404, "resource_not_found"]);
  });
});

describe("a rewind's input", () => {
  it("when the match lacks every id, lacks since, has a bad date or ends before it starts, then 400 naming the field", async () => {
    const t = await f.tenant();
    const since = "2026-11-23T09:00:00Z";
    for (const [body, pointer] of [
      [{ match: { since } }, "/match/credential_id"],
      [{ match: { credential_id: "key_x" } }, "/match/since"],
      [{ match: { credential_id: "key_x", since: "yesterday" } }, "/match/since"],
      [{ match: { credential_id: "key_x", since: "2026-11-23" } }, "/match/since"],
      [{ match: { credential_id: "key_x", since, until: "soon" } }, "/match/until"],
      [{ match: { credential_id: "key_x", since, until: "2026-11-23T08:00:00Z" } }, "/match/until"],
      [{ match: { credential_id: "key_x", since, until: since } }, "/match/until"],
      [{ match: { credential_id: "key_x", since }, dry_run: "no" }, "/dry_run"],
      [{ match: { credential_id: "key_x", since, task_id: "T-1" } }, "/match/task_id"],
      [{}, "/match"],
    ] as const) {
      const r = await rewind(t, body);
      expect([r.status, r.body.code, r.body.errors?.[0]?.pointer], `${JSON.stringify(body)}: ${r.text}`).toEqual([400, "validation_failed", pointer]);
    }
  });
});
