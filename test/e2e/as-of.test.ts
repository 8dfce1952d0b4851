import { page, Task } from "@tasksvc/contracts";
import { bodyOf, e2eContext, type Tenant } from "@tasksvc/testing";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

// Reads as of an instant: a task and the list as they stood then, from the tasks' immutable
// versions. An oracle replays a random sequence of edits with the times the API answered, and
// every instant asked of it agrees with the service.
const { gw, f } = e2eContext();

type Shown = Pick<Task, "version" | "title" | "status" | "priority" | "story_points" | "description">;
const shown = (t: Task): Shown => ({
  version: t.version,
  title: t.title,
  status: t.status,
  priority: t.priority,
  story_points: t.story_points,
  description: t.description,
});

const Edit = fc.oneof(
  fc.record({ title: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim() === s && s.trim().length > 0 && !/\p{Cc}/u.test(s)) }),
  fc.record({ status: fc.constantFrom("TODO", "IN_PROGRESS", "BLOCKED", "COMPLETED") }),
  fc.record({ priority: fc.constantFrom("LOW", "MEDIUM", "HIGH", "URGENT", null) }),
  fc.record({ story_points: fc.constantFrom(1, 2, 3, 5, 8, null) }),
  fc.record({ description: fc.constantFrom("first", "second", null) }),
);

async function asOf(t: Tenant, id: string, at: number) {
  return gw.get(`/v1/tasks/${id}?as_of=${new Date(at).toISOString()}`, { token: t.apiKey });
}

async function listAsOf(t: Tenant, at: string, query = ""): Promise<Task[]> {
  const out: Task[] = [];
  let after: string | null = null;
  do {
    const path: string = `/v1/tasks?as_of=${at}&limit=2${query}${after === null ? "" : `&after=${after}`}`;
    const r = await gw.get(path, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const p: { data: Task[]; next_cursor: string | null } = bodyOf(r, page(Task));
    out.push(...p.data);
    after = p.next_cursor;
  } while (after !== null);
  return out;
}

describe("a task as of an instant", () => {
  it("when random edits were made, then at any instant between them the task is as the replayed edits left it", async () => {
    const t = await f.tenant();
    await fc.assert(
      fc.asyncProperty(fc.array(Edit, { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { minLength: 3, maxLength: 6 }), async (edits, picks) => {
        const created = await gw.post("/v1/tasks", { title: "oracle" }, { token: t.apiKey });
        expect(created.status, created.text).toBe(201);
        const first = bodyOf(created, Task);
        // The oracle: each state with the time it began (the answer's updated_at, cut to the millisecond).
        const states: { at: number; task: Shown }[] = [{ at: Date.parse(first.updated_at), task: shown(first) }];
        for (const edit of edits) {
          const r = await gw.patch(`/v1/tasks/${first.id}`, edit, { token: t.apiKey });
          expect(r.status, r.text).toBe(200);
          const task = bodyOf(r, Task);
          const last = states[states.length - 1];
          // An edit that changed nothing writes no version.
          if (last !== undefined && task.version !== last.task.version) states.push({ at: Date.parse(task.updated_at), task: shown(task) });
        }
        // A version's time has microseconds: an instant a millisecond past a state's start is after it,
        // and one is usable when the next state begins later still.
        const instants = states.flatMap((s, i) => {
          const next = states[i + 1];
          return next === undefined || next.at > s.at + 1 ? [{ at: s.at + 1, expect: s.task }] : [];
        });
        for (const pick of picks) {
          const probe = instants[pick % instants.length];
          if (probe === undefined) continue;
          const r = await asOf(t, first.id, probe.at);
          expect(r.status, r.text).toBe(200);
          expect(shown(bodyOf(r, Task))).toEqual(probe.expect);
        }
        const before = await asOf(t, first.id, (states[0]?.at ?? 0) - 1000);
        expect([before.status, before.body.code], before.text).toEqual([404, "resource_not_found"]);
      }),
      { numRuns: 8 },
    );
  });

  it("when a task is read as of an instant, then its id, owner and creation are the task's, and updated_at is that version's time", async () => {
    const t = await f.tenant();
    const made = bodyOf(await gw.post("/v1/tasks", { title: "before" }, { token: t.apiKey }), Task);
    const later = new Date(Date.parse(made.updated_at) + 1).toISOString();
    await new Promise((r) => setTimeout(r, 5));
    expect((await gw.patch(`/v1/tasks/${made.id}`, { title: "after" }, { token: t.apiKey })).status).toBe(200);
    const r = await gw.get(`/v1/tasks/${made.id}?as_of=${later}`, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("etag")).toBe('"1"');
    expect(bodyOf(r, Task)).toEqual(made);
  });

  it("when the task is in the trash now, then as of any instant it is 404, as on every task route", async () => {
    const t = await f.tenant();
    const made = bodyOf(await gw.post("/v1/tasks", { title: "trashed" }, { token: t.apiKey }), Task);
    expect((await gw.delete(`/v1/tasks/${made.id}`, { token: t.apiKey })).status).toBe(200);
    const r = await asOf(t, made.id, Date.parse(made.updated_at) + 1);
    expect([r.status, r.body.code], r.text).toEqual([404, "resource_not_found"]);
  });

  it("when as_of is no date-time with an offset, then 400 naming as_of", async () => {
    const t = await f.tenant();
    for (const bad of ["yesterday", "2026-11-23", "2026-11-23T09:00:00"]) {
      const r = await gw.get(`/v1/tasks/T-1?as_of=${bad}`, { token: t.apiKey });
      expect([r.status, r.body.errors?.[0]?.pointer], `${bad}: ${r.text}`).toEqual([400, "/as_of"]);
    }
  });
});

describe("the list as of an instant", () => {
  it("when tasks were made and changed since, then the list at the instant has the tasks then, as they were, newest change first, page by page", async () => {
    const t = await f.tenant();
    const project = await gw.post("/v1/projects", { name: "as of" }, { token: t.apiKey });
    expect(project.status, project.text).toBe(201);
    const a = bodyOf(await gw.post("/v1/tasks", { title: "a", project_ids: [project.body.id] }, { token: t.apiKey }), Task);
    await new Promise((r) => setTimeout(r, 5));
    const b = bodyOf(await gw.post("/v1/tasks", { title: "b" }, { token: t.apiKey }), Task);
    await new Promise((r) => setTimeout(r, 5));
    const c = bodyOf(await gw.post("/v1/tasks", { title: "c", status: "BLOCKED" }, { token: t.apiKey }), Task);
    const then = new Date(Date.parse(c.updated_at) + 1).toISOString();
    await new Promise((r) => setTimeout(r, 5));
    const changed = await gw.patch(`/v1/tasks/${a.id}`, { status: "COMPLETED", project_ids: [] }, { token: t.apiKey });
    expect(changed.status, changed.text).toBe(200);
    expect((await gw.post("/v1/tasks", { title: "d" }, { token: t.apiKey })).status).toBe(201);
    expect((await gw.delete(`/v1/tasks/${b.id}`, { token: t.apiKey })).status).toBe(200);

    expect(await listAsOf(t, then)).toEqual([c, a]);
    expect(await listAsOf(t, then, "&sort=updated_at")).toEqual([a, c]);
    expect(await listAsOf(t, then, "&status=TODO")).toEqual([a]);
    expect(await listAsOf(t, then, "&status=COMPLETED")).toEqual([]);
    expect(await listAsOf(t, then, `&project_id=${project.body.id}`)).toEqual([a]);
    // Now, a is COMPLETED and in no project: the plain list says so.
    const now = await gw.get("/v1/tasks?status=TODO", { token: t.apiKey });
    expect(bodyOf(now, page(Task)).data.map((x) => x.title)).toEqual(["d"]);
    // Archived is the state now: an archived task is in `archived=true` as of any instant.
    expect((await gw.post(`/v1/tasks/${c.id}/archive`, undefined, { token: t.apiKey })).status).toBe(200);
    expect((await listAsOf(t, then, "&archived=true")).map((x) => [x.id, x.archived])).toEqual([[c.id, true]]);
    expect((await listAsOf(t, then)).map((x) => x.id)).toEqual([a.id]);
  });

  it("when as_of comes with another filter or sort, then 400 naming that parameter", async () => {
    const t = await f.tenant();
    const at = "2026-11-23T09:30:00Z";
    for (const [query, pointer] of [
      ["priority=HIGH", "/priority"],
      ["q=word", "/q"],
      ["assignee_id=me", "/assignee_id"],
      ["sort=created_at", "/sort"],
      ["sort=-due_date", "/sort"],
      ["updated_gte=2026-01-01T00:00:00Z", "/updated_gte"],
    ]) {
      const r = await gw.get(`/v1/tasks?as_of=${at}&${query}`, { token: t.apiKey });
      expect([r.status, r.body.code, r.body.errors?.[0]?.pointer], `${query}: ${r.text}`).toEqual([400, "validation_failed", pointer]);
    }
    const bad = await gw.get("/v1/tasks?as_of=soon", { token: t.apiKey });
    expect([bad.status, bad.body.errors?.[0]?.pointer], bad.text).toEqual([400, "/as_of"]);
  });

  it("when another organization lists as of an instant, then it sees none of this one's tasks", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const made = bodyOf(await gw.post("/v1/tasks", { title: "mine" }, { token: t.apiKey }), Task);
    expect(await listAsOf(other, new Date(Date.parse(made.updated_at) + 1).toISOString())).toEqual([]);
    const r = await asOf(other, made.id, Date.parse(made.updated_at) + 1);
    expect(r.status, r.text).toBe(404);
  });
});
