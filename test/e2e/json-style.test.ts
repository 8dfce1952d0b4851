import { randomBytes } from "node:crypto";
import { e2eContext, must, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// One JSON style for every answer: compact (as JSON.stringify writes it), and one task in the
// same bytes wherever it is shown: alone, in a list page, in a write's answer and its replay, and
// as the `data` of its events in the feed. Lists and the feed are built from Postgres' JSON, the
// single reads and writes in TypeScript: these tests compare raw bodies, not parsed values.
const { gw, gw2, f, db } = e2eContext();

/** The body as JSON.stringify writes the value it encodes: no space after `:` or `,`, nothing around. */
const compact = (text: string) => JSON.stringify(JSON.parse(text));

const get = async (t: Tenant, path: string) => {
  const r = await gw.get(path, { token: t.apiKey });
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.text;
};

/** The list item with this id, re-encoded: its fields in the list's order (JSON.parse keeps it). */
const itemOf = (listText: string, id: string) =>
  JSON.stringify(
    must(
      JSON.parse(listText).data.find((x: { id: string }) => x.id === id),
      id,
    ),
  );

// Titles and texts hold quotes, backslashes, control characters, U+2028 and an emoji (each
// renderer must escape them alike), but never `": "`, so a raw body's text is its JSON's.
const FULL = {
  title: 'Style "quoted" \\ back ünï 🚀',
  description: "line one\nline two",
  status: "IN_PROGRESS",
  priority: "HIGH",
  start_date: "2026-03-29T01:30:00.5+02:00",
  due_date: "2026-12-31",
  notes: "tab\t bell\u0007 sep\u2028 </script>",
  story_points: 0.5,
  recurrence: { frequency: "WEEKLY", interval: 2, by_weekday: [1, 3], timezone: "Europe/Berlin" },
};

describe("one task in the same bytes in every answer", () => {
  it("when a task is created, read alone, listed, patched and replayed, then each answer and its feed events show it byte for byte alike, compact", async () => {
    const t = await f.tenant();
    const project = await gw.post("/v1/projects", { name: "style" }, { token: t.apiKey });
    expect(project.status, project.text).toBe(201);
    const parent = await gw.post("/v1/tasks", { title: "parent" }, { token: t.apiKey });
    const body = { ...FULL, project_ids: [project.body.id], parent_task_id: parent.body.id };
    const createKey = { "idempotency-key": `create-${randomBytes(4).toString("hex")}` };
    const created = await gw.post("/v1/tasks", body, { token: t.apiKey, headers: createKey });
    expect(created.status, created.text).toBe(201);
    const id: string = created.body.id;
    expect(created.text).toBe(compact(created.text));

    // Alone, listed (as it is and among the archived), and the create's replay.
    expect(await get(t, `/v1/tasks/${id}`)).toBe(created.text);
    const listed = await get(t, "/v1/tasks?limit=100");
    expect(listed).toBe(compact(listed));
    expect(listed).toContain(created.text);
    expect(itemOf(listed, id)).toBe(created.text);
    const replayed = await gw2.post("/v1/tasks", body, { token: t.apiKey, headers: createKey });
    expect(replayed.headers.get("idempotency-replayed")).toBe("true");
    expect(replayed.text).toBe(created.text);

    // A change, with story points JavaScript writes in exponent form (Postgres' numeric would not).
    const patchKey = { "idempotency-key": `patch-${randomBytes(4).toString("hex")}` };
    const patched = await gw.patch(`/v1/tasks/${id}`, { title: "Style changed", story_points: 1e-7 }, { token: t.apiKey, headers: patchKey });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.text).toContain('"story_points":1e-7');
    expect(await get(t, `/v1/tasks/${id}`)).toBe(patched.text);
    expect(await get(t, "/v1/tasks?limit=100")).toContain(patched.text);
    const patchReplayed = await gw2.patch(`/v1/tasks/${id}`, { title: "Style changed", story_points: 1e-7 }, { token: t.apiKey, headers: patchKey });
    expect(patchReplayed.headers.get("idempotency-replayed")).toBe("true");
    expect(patchReplayed.text).toBe(patched.text);

    const archived = await gw.post(`/v1/tasks/${id}/archive`, undefined, { token: t.apiKey });
    expect(archived.status, archived.text).toBe(200);
    const archivedList = await get(t, "/v1/tasks?archived=true");
    expect(archivedList).toBe(compact(archivedList));
    expect(archivedList).toContain(archived.text);

    // The feed: each event's data is the task as that write answered it.
    const feed = await get(t, `/v1/events?task_id=${id}`);
    expect(feed).toBe(compact(feed));
    const events: Array<{ id: string; type: string }> = JSON.parse(feed).data;
    expect(events.map((e) => e.type)).toEqual(["task.archived", "task.updated", "task.created"]);
    // Each event's data, then its changes (task.created has none), fields in the task's order, from before to.
    for (const text of [archived.text, patched.text, created.text])
      expect([`"data":${text}}`, `"data":${text},"changes":{`].some((x) => feed.includes(x))).toBe(true);
    expect(feed).toContain('"changes":{"version":{"from":2,"to":3},"archived":{"from":false,"to":true}}');
    const one = await get(t, `/v1/events/${events[1]?.id}`);
    expect(one).toBe(compact(one));
    expect(one.includes(`"data":${patched.text},"changes":{"version":{"from":1,"to":2},`), one).toBe(true);
  });

  it("when tasks of several shapes share a list page, then each item is the bytes of its own GET", async () => {
    const t = await f.tenant();
    const ids: string[] = [];
    for (const b of [
      { title: "bare" },
      FULL,
      { title: "tiny points", story_points: 0.0000015, due_date: "2024-02-29" },
      { title: "big", story_points: 1000 },
    ]) {
      const r = await gw.post("/v1/tasks", b, { token: t.apiKey });
      expect(r.status, r.text).toBe(201);
      ids.push(r.body.id);
    }
    const page = await get(t, "/v1/tasks?limit=2");
    expect(page).toBe(compact(page));
    const rest = await get(t, `/v1/tasks?limit=100`);
    for (const id of ids) expect(rest).toContain(await get(t, `/v1/tasks/${id}`));
  });

  it("when tasks are written in a batch, then each item's task is the bytes of its GET", async () => {
    const t = await f.tenant();
    const parent = (await gw.post("/v1/tasks", { title: "parent" }, { token: t.apiKey })).body;
    const { recurrence: _r, ...once } = FULL;
    const operations = [
      { method: "create", body: { ...once, parent_task_id: parent.id } },
      { method: "archive", task_id: parent.id },
    ];
    const r = await gw.post("/v1/tasks/batch", { operations }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    const results: Array<{ body: { id: string } }> = JSON.parse(r.text).results;
    for (const item of results) expect(r.text, item.body.id).toContain(`"body":${await get(t, `/v1/tasks/${item.body.id}`)}`);
  });
});

describe("every answer is compact JSON", () => {
  it("when each list and single read is fetched, then its raw body is what JSON.stringify writes", async () => {
    const t = await f.tenant();
    const project = (await gw.post("/v1/projects", { name: "compact" }, { token: t.apiKey })).body;
    const a = (await gw.post("/v1/tasks", { ...FULL, project_ids: [project.id] }, { token: t.apiKey })).body;
    const b = (await gw.post("/v1/tasks", { title: "blocker" }, { token: t.apiKey })).body;
    expect((await gw.patch(`/v1/tasks/${a.id}`, { title: "changed" }, { token: t.apiKey })).status).toBe(200);
    expect((await gw.post(`/v1/tasks/${a.id}/dependencies`, { blocker_task_id: b.id }, { token: t.apiKey })).status).toBe(201);
    const day = "2026-11-23";
    expect((await gw.post("/v1/daily-plan/entries", { date: day, task_id: a.id, section: "TODO" }, { token: t.apiKey })).status).toBe(201);
    const endpoint = (await gw.post("/v1/webhook-endpoints", { url: "https://hooks.example.com/style" }, { token: t.apiKey })).body;
    // Disabled, so that the row put in its log below stays as it is (no dispatcher claims it).
    expect((await gw.patch(`/v1/webhook-endpoints/${endpoint.id}`, { enabled: false }, { token: t.apiKey })).status).toBe(200);
    const delivery = `whd_${randomBytes(9).toString("hex")}`;
    await db`
      insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, created_at)
      values (${delivery}, ${t.organizationId}, ${endpoint.id}, ${`evt_${randomBytes(9).toString("hex")}`}, 'task.created',
        ${db.json({ type: "task.created", timestamp: "2026-11-23T10:00:00.000Z", data: { id: a.id } })}, 'FAILED', 1, null, now())`;
    const event = JSON.parse(await get(t, "/v1/events?limit=1")).data[0];

    const paths = [
      "/v1/organizations",
      `/v1/organizations/${t.organizationId}`,
      "/v1/members",
      "/v1/api-keys",
      "/v1/tasks",
      "/v1/tasks?archived=true",
      `/v1/tasks/${a.id}`,
      `/v1/tasks/${a.id}/history`,
      `/v1/tasks/${a.id}/dependencies`,
      `/v1/tasks/${a.id}/attachments`,
      "/v1/events",
      `/v1/events/${event.id}`,
      "/v1/projects",
      `/v1/projects/${project.id}`,
      `/v1/daily-plan?date=${day}`,
      "/v1/webhook-endpoints",
      `/v1/webhook-endpoints/${endpoint.id}`,
      `/v1/webhook-endpoints/${endpoint.id}/deliveries`,
      `/v1/webhook-endpoints/${endpoint.id}/deliveries/${delivery}/attempts`,
    ];
    for (const path of paths) {
      const text = await get(t, path);
      expect(text, path).toBe(compact(text));
    }
  });
});
