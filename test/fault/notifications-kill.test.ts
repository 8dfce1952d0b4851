import { type ApiResponse, api, eventually, factories } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants } from "./load.js";
import { seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * The notifications service killed with SIGKILL while task events flow: tasks are created at a
 * steady rate, each assigning two members; the service's only replica is paused until 100 tasks
 * wait, resumed, and killed as soon as it has written part of them, then started again. Events it had written but not acknowledged come back and must add nothing;
 * events it had not written must still be written. In the end every member holds exactly one
 * `assigned` notification per task, and the unread counters equal the unread rows.
 */
let stack: ProcessStack;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startProcessStack({ replicas: { gateway: 1, tasks: 1, keys: 1, boards: 1, notifications: 1 } });
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

/** Creates tasks assigning `assignees` at about `perSecond`, until stopped; answers the ids of those acknowledged. */
function writer(url: string, apiKey: string, assignees: string[], perSecond: number) {
  const gw = api(url);
  const created: string[] = [];
  let stopped = false;
  const running = (async () => {
    while (!stopped) {
      const started = Date.now();
      const r = await gw.post("/v1/tasks", { title: `assigned ${created.length}`, assignee_ids: assignees }, { token: apiKey });
      if (r.status === 201) created.push(r.body.id as string);
      // The writer's pace, not a wait for anything.
      await new Promise((res) => setTimeout(res, Math.max(0, 1000 / perSecond - (Date.now() - started))));
    }
  })();
  return {
    created,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Every notification of a user, through the API, all pages. */
async function inboxOf(url: string, apiKey: string): Promise<Array<{ type: string; task_id: string; event_id: string }>> {
  const gw = api(url);
  const out: Array<{ type: string; task_id: string; event_id: string }> = [];
  let after: string | null = null;
  do {
    const r: ApiResponse = await gw.get(`/v1/notifications?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`, { token: apiKey });
    expect(r.status, r.text).toBe(200);
    out.push(...r.body.data);
    after = r.body.has_more ? r.body.next_cursor : null;
  } while (after);
  return out;
}

describe("the notifications service killed while events flow", () => {
  it("when its only replica gets SIGKILL mid-stream and starts again, then every assignee has exactly one notification per task, none lost, none doubled", async () => {
    const url = stack.gatewayUrls[0] as string;
    const [owner] = await prepareLoadTenants(stack, 1);
    if (!owner) throw new Error("no tenant");
    const f = factories({ ...stack, gatewayUrls: [], databaseUrl: "" });
    const members = [await f.user(owner.organizationId), await f.user(owner.organizationId)];
    await f.close();
    const gw = api(url);
    const unread = async (apiKey: string) => (await gw.get("/v1/notifications/unread-count", { token: apiKey })).body.count as number;

    const w = writer(url, owner.apiKey, [...members.map((m) => m.userId), owner.userId], 25);
    await eventually(async () => (await unread(members[0]?.apiKey ?? "")) >= 30, { timeoutMs: 60_000, what: "notifications to flow" });
    // Paused, so a backlog waits in the stream; resumed, and killed once it has written part of it:
    // the kill lands in the middle of the consumer's work, never between two quiet moments.
    const rows = async () =>
      Number((await sql`select count(*)::int as n from notifications.notifications where organization_id = ${owner.organizationId}`)[0]?.["n"]);
    stack.signal("notifications", 0, "SIGSTOP");
    const pausedAt = w.created.length;
    await eventually(() => w.created.length >= pausedAt + 100, { timeoutMs: 60_000, what: "a backlog while the service is paused" });
    const before = await rows();
    stack.signal("notifications", 0, "SIGCONT");
    let atKill = before;
    await eventually(async () => (atKill = await rows()) > before, { timeoutMs: 30_000, intervalMs: 5, what: "the backlog's first notifications" });
    const killedAt = Date.now();
    await stack.kill("notifications", 0, "SIGKILL");
    const writtenAtKill = w.created.length;
    // At least 100 tasks × 2 members were owed when the kill came: it was mid-stream.
    expect(atKill - before, "notifications written between the resume and the kill").toBeLessThan(200);
    // Events pile up in the stream while no replica runs.
    await eventually(() => w.created.length >= writtenAtKill + 40, { timeoutMs: 60_000, what: "more tasks while the service is down" });
    stack.restart("notifications", 0);
    await eventually(() => w.created.length >= writtenAtKill + 80, { timeoutMs: 60_000, what: "more tasks after the restart" });
    await w.stop();
    const tasks = w.created;

    let caughtUpAt = Number.POSITIVE_INFINITY;
    await eventually(
      async () => {
        for (const m of members) if ((await unread(m.apiKey)) < tasks.length) return false;
        caughtUpAt = Date.now();
        return true;
      },
      { timeoutMs: 90_000, what: "every assignee's notifications" },
    );
    for (const m of members) {
      const notes = await inboxOf(url, m.apiKey);
      const byTask = new Map<string, number>();
      for (const n of notes) byTask.set(n.task_id, (byTask.get(n.task_id) ?? 0) + 1);
      const lost = tasks.filter((t) => !byTask.has(t));
      const doubled = [...byTask].filter(([, n]) => n > 1).map(([t]) => t);
      expect({ lost, doubled, count: notes.length }).toEqual({ lost: [], doubled: [], count: tasks.length });
      expect(new Set(notes.map((n) => n.type))).toEqual(new Set(["assigned"]));
      expect(await unread(m.apiKey)).toBe(tasks.length);
    }
    // The creator, assigned too, acted: nothing for them.
    expect(await inboxOf(url, owner.apiKey)).toEqual([]);
    // The counters, kept by the same statements, equal the rows after the crash.
    const drift = await sql`
      select c.user_id, c.unread, count(n.id) as rows from notifications.unread_counts c
      left join notifications.notifications n on n.organization_id = c.organization_id and n.user_id = c.user_id and n.read_at is null
      where c.organization_id = ${owner.organizationId}
      group by c.user_id, c.unread having c.unread <> count(n.id)`;
    expect(drift).toEqual([]);
    console.log(
      `notifications kill -9: ${tasks.length} tasks (${writtenAtKill} before the kill; ${atKill - before} of the backlog's notifications written when it came), ${tasks.length * members.length} notifications, lost 0, doubled 0; caught up ${seconds(caughtUpAt - killedAt)} after the kill`,
    );
    expect(stack.unexpectedExits).toEqual([]);
  });
});
