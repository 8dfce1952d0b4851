import { Task } from "@tasksvc/contracts";
import { e2eContext, eventually, type Tenant, bodyOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The sync recipe under concurrent writes: a reader that pages `sort=updated_at&updated_gte=<the
// last updated_at it saw>` over and over, upserting what it gets into a mirror, ends up with the
// table exactly, while writers change and create tasks all along. A change the reader skips (one
// committed late with an earlier updated_at than a row already read, or one moved past a page
// boundary) is never read again, so the mirror would stay behind for good.

const { gw, f } = e2eContext();

const STATUSES = ["TODO", "IN_PROGRESS", "IN_REVIEW", "COMPLETED", "BLOCKED"] as const;
const PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT", null] as const;
const INITIAL = 300;
const WRITERS = 4;
const WRITES_EACH = 120;

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;

interface Page {
  data: Task[];
  has_more: boolean;
  next_cursor: string | null;
}

/** A reader of the sync recipe: rounds of pages from its watermark, into a mirror by id. */
function syncReader(t: Tenant) {
  const mirror = new Map<string, Task>();
  let watermark: string | undefined;
  const problems: string[] = [];
  let rounds = 0;
  let pages = 0;
  /** Tasks seen again with other content (a change observed while it happened). */
  let changesSeen = 0;

  /** One round to the end of the list; answers how many tasks it added or changed in the mirror. */
  async function round(): Promise<number> {
    let changed = 0;
    let after: string | undefined;
    let last = watermark;
    rounds++;
    for (;;) {
      const qs = new URLSearchParams({ sort: "updated_at", limit: "50", ...(watermark ? { updated_gte: watermark } : {}), ...(after ? { after } : {}) });
      const r = await gw.get<Page>(`/v1/tasks?${qs}`, { token: t.apiKey });
      if (r.status !== 200) throw new Error(`GET /v1/tasks?${qs}: ${r.status} ${r.text}`);
      pages++;
      for (const task of r.body.data) {
        // Ascending within a round, across its pages too: each page starts after the last one.
        if (last !== undefined && task.updated_at < last) problems.push(`${task.id} at ${task.updated_at} came after ${last} (round ${rounds})`);
        last = task.updated_at;
        const before = mirror.get(task.id);
        if (before && before.updated_at > task.updated_at) problems.push(`${task.id} went back from ${before.updated_at} to ${task.updated_at}`);
        if (!before || JSON.stringify(before) !== JSON.stringify(task)) {
          changed++;
          if (before) changesSeen++;
        }
        mirror.set(task.id, task);
      }
      if (!r.body.has_more) break;
      if (r.body.data.length === 0 || !r.body.next_cursor) throw new Error(`has_more without rows or cursor: ${r.text}`);
      after = r.body.next_cursor;
    }
    watermark = last;
    return changed;
  }

  return {
    mirror,
    problems,
    round,
    stats: () => ({ rounds, pages, changesSeen, mirrored: mirror.size, watermark }),
  };
}

async function everyTask(t: Tenant): Promise<Map<string, Task>> {
  const all = new Map<string, Task>();
  let after: string | undefined;
  do {
    const qs = new URLSearchParams({ limit: "100", ...(after ? { after } : {}) });
    const r = await gw.get<Page>(`/v1/tasks?${qs}`, { token: t.apiKey });
    expect(r.status, r.text).toBe(200);
    for (const task of r.body.data) {
      expect(all.has(task.id), `${task.id} listed twice`).toBe(false);
      all.set(task.id, task);
    }
    after = r.body.has_more ? (r.body.next_cursor ?? undefined) : undefined;
  } while (after);
  return all;
}

/** The mirror's differences from the table, by task id (empty when they are equal). */
function differences(mirror: Map<string, Task>, table: Map<string, Task>): string[] {
  const out: string[] = [];
  for (const [id, t] of table) {
    const m = mirror.get(id);
    if (!m) out.push(`${id} missing from the mirror (updated_at ${t.updated_at})`);
    else if (JSON.stringify(m) !== JSON.stringify(t)) out.push(`${id}: mirror ${JSON.stringify(m)} but table ${JSON.stringify(t)}`);
  }
  for (const id of mirror.keys()) if (!table.has(id)) out.push(`${id} in the mirror but not in the table`);
  return out;
}

describe("the sync recipe", () => {
  it("when writers change and create tasks while a reader syncs by updated_at, then the reader's mirror ends equal to the table", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 1_000_000, quota: 100_000_000 });
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 6 }, async (_, w) => {
        for (let i = w; i < INITIAL; i += 6) {
          const r = await gw.post("/v1/tasks", { title: `task ${i}`, status: pick(STATUSES) }, { token: t.apiKey });
          expect(r.status, r.text).toBe(201);
          ids.push(bodyOf(r, Task).id);
        }
      }),
    );

    const reader = syncReader(t);
    let writing = true;
    let writes = 0;
    const writer = async (w: number) => {
      for (let i = 0; i < WRITES_EACH; i++) {
        if (Math.random() < 0.15) {
          const r = await gw.post("/v1/tasks", { title: `new ${w}.${i}`, priority: pick(PRIORITIES) ?? "LOW" }, { token: t.apiKey });
          expect(r.status, r.text).toBe(201);
          ids.push(bodyOf(r, Task).id);
        } else {
          const body: Record<string, unknown> = { title: `w${w} ${i}` };
          if (Math.random() < 0.5) body["status"] = pick(STATUSES);
          if (Math.random() < 0.5) body["priority"] = pick(PRIORITIES);
          const r = await gw.patch(`/v1/tasks/${pick(ids)}`, body, { token: t.apiKey });
          expect(r.status, r.text).toBe(200);
        }
        writes++;
      }
    };
    const reading = (async () => {
      let during = 0;
      while (writing) {
        await reader.round();
        during++;
      }
      return during;
    })();
    try {
      await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
    } finally {
      writing = false;
    }
    const roundsDuring = await reading;

    // Every write has been answered, so it has committed: a round finds nothing new once the
    // reader holds every change.
    await eventually(async () => (await reader.round()) === 0, { timeoutMs: 15_000, intervalMs: 20, what: "a sync round that finds nothing new" });
    const table = await everyTask(t);
    const stats = reader.stats();
    console.log(`sync: ${writes} writes by ${WRITERS} writers, ${table.size} tasks; reader ${JSON.stringify({ ...stats, roundsDuring })}`);
    expect(reader.problems).toEqual([]);
    expect(table.size).toBe(ids.length);
    expect(differences(reader.mirror, table)).toEqual([]);
    // The reader saw tasks change under it, in several rounds: the test was not a plain copy.
    expect(roundsDuring).toBeGreaterThan(2);
    expect(stats.changesSeen).toBeGreaterThan(20);
  }, 120_000);
});
