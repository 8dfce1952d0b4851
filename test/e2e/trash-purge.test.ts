import { type Api, api, eventually, factories, gatewayUrl, startExtraReplicas, type StartedStack, startStack, type Tenant } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The purge scheduler with two tasks replicas of this file's own (the stack starts none), each
// ticking every 100 ms, with a trash retention of one second: every trashed task is erased once,
// with one task.purged, however the two replicas' ticks meet.
const SETTINGS = { TRASH_RETENTION: "1s", PURGE_TICK: "100ms" };
type Replica = Awaited<ReturnType<typeof startExtraReplicas>>[number];
let stack: StartedStack;
let f: ReturnType<typeof factories>;
let gw: Api;
let db: postgres.Sql;
let replicas: Replica[] = [];

beforeAll(async () => {
  stack = await startStack({ replicas: { gateway: 1, tasks: 0 } });
  replicas = await startExtraReplicas(stack, "tasks", 2, SETTINGS);
  f = factories(stack);
  gw = api(gatewayUrl(stack));
  db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await f?.close();
  await db?.end({ timeout: 1 });
  await Promise.all(replicas.map((r) => r.stop()));
  await stack?.stop();
});

const as = (t: Tenant) => ({ token: t.apiKey });
async function newTask(t: Tenant, body: Record<string, unknown>): Promise<string> {
  const r = await gw.post("/v1/tasks", body, as(t));
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}

describe("purge scheduler", () => {
  it("when trashed tasks reach purge_at with two replicas ticking, then each is erased within a tick or two, with exactly one task.purged each", async () => {
    const t = await f.tenant();
    const parent = await newTask(t, { title: "parent" });
    const children: string[] = [];
    for (let i = 0; i < 4; i++) children.push(await newTask(t, { title: `child ${i}`, parent_task_id: parent }));
    const singles: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = await newTask(t, { title: `single ${i}` });
      expect((await gw.post(`/v1/tasks/${id}/comments`, { body: `comment ${i}` }, as(t))).status).toBe(201);
      expect((await gw.patch(`/v1/tasks/${id}`, { title: `single ${i}, v2` }, as(t))).status).toBe(200);
      singles.push(id);
    }
    const kept = await newTask(t, { title: "not deleted" });
    const deletedAt = new Map<string, number>();
    for (const id of [parent, ...singles]) {
      const r = await gw.delete(`/v1/tasks/${id}`, as(t));
      expect(r.status, r.text).toBe(200);
      deletedAt.set(id, Date.parse(r.body.purge_at));
    }
    const all = [parent, ...children, ...singles];
    const purged = await eventually(
      async () => {
        const rows = await db<{ id: string; n: number; at: Date }[]>`
          select payload->'data'->>'id' as id, count(*)::int as n, min(created_at) as at from tasks.events
          where organization_id = ${t.organizationId} and type = 'task.purged' group by 1`;
        if (rows.length < all.length) throw new Error(`${rows.length} of ${all.length} purged so far`);
        return rows;
      },
      { what: "every trashed task purged", timeoutMs: 30_000 },
    );
    expect(new Set(purged.map((r) => r.id))).toEqual(new Set(all));
    // Exactly once each, though both replicas tick on the same rows.
    expect(purged.filter((r) => r.n !== 1)).toEqual([]);
    for (const r of purged) {
      const due = deletedAt.get(r.id) ?? deletedAt.get(parent) ?? 0;
      expect(r.at.getTime() - due).toBeLessThan(60_000);
    }
    const rows = await db`select number from tasks.tasks where organization_id = ${t.organizationId}`;
    expect(rows.map((r) => `T-${r["number"]}`)).toEqual([kept]);
    const left = await db`
      select (select count(*) from tasks.task_versions where organization_id = ${t.organizationId})::int as versions,
        (select count(*) from tasks.comments where organization_id = ${t.organizationId})::int as comments`;
    expect(left[0]).toEqual({ versions: 1, comments: 0 });
    expect((await gw.get("/v1/trash", as(t))).body.data).toEqual([]);
    // The feed keeps what happened, reduced.
    const feed = await gw.get(`/v1/events?type=task.created&limit=100`, as(t));
    const created = feed.body.data as Array<{ data: Record<string, unknown> }>;
    expect(created.filter((e) => e.data["id"] !== kept).every((e) => Object.keys(e.data).join() === "id")).toBe(true);
  }, 60_000);

  it("when a trashed task is restored before purge_at passes, then it stays; deleted again, it goes at its new purge_at", async () => {
    const t = await f.tenant();
    const id = await newTask(t, { title: "brought back" });
    expect((await gw.delete(`/v1/tasks/${id}`, as(t))).status).toBe(200);
    const r = await gw.post(`/v1/tasks/${id}/restore`, undefined, as(t));
    // With a retention of a second the restore may come too late; either way the task is erased at most once.
    if (r.status === 200) {
      expect((await gw.get(`/v1/tasks/${id}`, as(t))).status).toBe(200);
      expect((await gw.delete(`/v1/tasks/${id}`, as(t))).status).toBe(200);
    } else expect(r.status, r.text).toBe(404);
    await eventually(async () => (await gw.get(`/v1/events?type=task.purged`, as(t))).body.data.length === 1, { what: "one task.purged" });
    const n = await db`select count(*)::int as n from tasks.events where organization_id = ${t.organizationId} and type = 'task.purged'`;
    expect(n[0]?.["n"]).toBe(1);
  });
});
