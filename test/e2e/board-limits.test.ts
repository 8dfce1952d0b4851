import { MAX_SECTION_ENTRIES } from "@tasksvc/contracts";
import { api, factories, gatewayUrl, type Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(gatewayUrl(stack));
const f = factories(stack);
afterAll(() => f.close());

const DAY = "2026-11-24";
const plan = (t: Tenant, task_id: string, section = "TODO") => gw.post("/v1/daily-plan/entries", { date: DAY, task_id, section }, { token: t.apiKey });
const board = async (t: Tenant) =>
  (await gw.get(`/v1/daily-plan?date=${DAY}`, { token: t.apiKey })).body as { sections: { section: string; entries: unknown[] }[] };
const counts = async (t: Tenant) => (await board(t)).sections.map((s) => s.entries.length);

/** `n` subtasks of `parent`, a batch of at most 100 at a time. */
async function subtasks(t: Tenant, parent: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < n; done += 100) {
    const operations = Array.from({ length: Math.min(100, n - done) }, (_, i) => ({
      method: "create",
      body: { title: `Step ${done + i + 1}`, parent_task_id: parent },
    }));
    const r = await gw.post("/v1/tasks/batch", { operations }, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    for (const item of (r.body as { results: { status: number; body: { id: string } }[] }).results) {
      expect(item.status).toBe(201);
      ids.push(item.body.id);
    }
  }
  return ids;
}

describe("how many entries a board section holds", () => {
  it(`when a parent's subtasks would take a section past ${MAX_SECTION_ENTRIES} entries, then 409 limit_reached and nothing is placed; within it, all are placed, and the section then takes no more`, async () => {
    const t = await f.tenant("team");
    const parent = (await gw.post("/v1/tasks", { title: "Move house" }, { token: t.apiKey })).body.id as string;
    const steps = await subtasks(t, parent, MAX_SECTION_ENTRIES);

    const over = await plan(t, parent);
    expect(over.status, over.text).toBe(409);
    expect(over.body).toMatchObject({ code: "limit_reached" });
    expect(over.body.detail).toContain(`more than ${MAX_SECTION_ENTRIES} entries`);
    expect(await counts(t)).toEqual([0, 0]);

    // One subtask archived: the parent and the other subtasks fill the section exactly.
    const archived = await gw.post(`/v1/tasks/${steps[0]}/archive`, {}, { token: t.apiKey });
    expect(archived.status, archived.text).toBe(200);
    const placed = await plan(t, parent);
    expect(placed.status, placed.text).toBe(201);
    expect(await counts(t)).toEqual([MAX_SECTION_ENTRIES, 0]);

    const another = (await gw.post("/v1/tasks", { title: "Call the bank" }, { token: t.apiKey })).body.id as string;
    const full = await plan(t, another);
    expect(full.status, full.text).toBe(409);
    expect(full.body).toMatchObject({ code: "limit_reached" });
    // The other section is a section of its own.
    expect((await plan(t, another, "PROGRESS")).status).toBe(201);
    expect(await counts(t)).toEqual([MAX_SECTION_ENTRIES, 1]);
  });
});
