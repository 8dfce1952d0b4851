import { Event, page, Task, type TaskEvent } from "@tasksvc/contracts";
import { type ApiResponse, bodyOf, e2eContext, eventually, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// DESIGN.md section 20, "Size", for events: an envelope stays under 256 KiB when its data leaves
// room (the free-text fields' changes become lengths), the largest task there is still makes an
// envelope NATS can carry, and one organization's large event never holds up another's.

const { gw, f, events, db } = e2eContext();

const auth = (t: Tenant) => ({ token: t.apiKey });
/** An envelope's size as published: its JSON in UTF-8. */
const bytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), "utf8");
// The worst-escaping characters each field allows (docs/errors.md, Input rules): a control
// character is written `\u0001` in JSON, 6 bytes for one character, and free text keeps them; a
// title refuses them, and its worst is a character of 3 bytes in UTF-8 (€).
const KIB = 1024;
const MAX_PAYLOAD = 1024 * KIB;

/** The stream's events of one organization after the mark, once `count` of them arrived. */
async function streamedOf(mark: number, t: Tenant, count: number): Promise<TaskEvent[]> {
  return eventually(
    async () => {
      const mine = (await events.since(mark)).filter((e) => e.organization_id === t.organizationId);
      expect(mine.length, `events of ${t.organizationId} on the stream`).toBeGreaterThanOrEqual(count);
      return mine;
    },
    { what: `${count} events of ${t.organizationId} on the stream`, timeoutMs: 30_000, intervalMs: 500 },
  );
}

/** The webhook bodies made for one organization's endpoint, by event id, once `count` exist. */
async function deliveredOf(t: Tenant, count: number): Promise<Map<string, { changes?: unknown }>> {
  return eventually(
    async () => {
      // Each delivery with its event's body, stored once for the event as the text sent.
      const rows = await db<{ event_id: string; body: string }[]>`
        select d.event_id, b.body from webhooks.deliveries d join webhooks.event_bodies b on b.event_id = d.event_id
        where d.organization_id = ${t.organizationId}`;
      expect(rows.length, `deliveries of ${t.organizationId}`).toBeGreaterThanOrEqual(count);
      return new Map(rows.map((r) => [r.event_id, JSON.parse(r.body) as { changes?: unknown }]));
    },
    { what: `${count} deliveries of ${t.organizationId}`, timeoutMs: 30_000, intervalMs: 250 },
  );
}

/** The ids of every event in an organization's feed (all pages). */
async function feedIds(t: Tenant): Promise<string[]> {
  const ids: string[] = [];
  let after: string | null = null;
  do {
    const r: ApiResponse = await gw.get(`/v1/events?limit=100${after ? `&after=${encodeURIComponent(after)}` : ""}`, auth(t));
    expect(r.status, r.text.slice(0, 500)).toBe(200);
    const feed = bodyOf(r, page(Event));
    ids.push(...feed.data.map((e) => e.id));
    after = feed.next_cursor;
  } while (after);
  return ids;
}

async function endpoint(t: Tenant): Promise<void> {
  const hook = await gw.post("/v1/webhook-endpoints", { url: `https://hooks.example.com/size/${t.organizationId}` }, auth(t));
  expect(hook.status, hook.text).toBe(201);
}

describe("event size", () => {
  it("when one organization writes 100,000 control characters of notes, then another organization's events, more than a relay batch of them, all reach the stream and its webhooks, in order", async () => {
    const a = await f.tenant();
    // On the team plan: its burst window takes the 300 calls of the batches below.
    const b = await f.tenant("team");
    await endpoint(b);
    const mark = await events.mark();
    const big = await gw.post("/v1/tasks", { title: "Large notes" }, auth(a));
    expect(big.status, big.text).toBe(201);
    const first = await gw.post("/v1/tasks", { title: "Ordinary" }, auth(b));
    expect(first.status, first.text).toBe(201);
    const firstId = bodyOf(first, Task).id;

    const patched = await gw.patch(`/v1/tasks/${bodyOf(big, Task).id}`, { notes: "\u0001".repeat(100_000) }, auth(a));
    expect(patched.status, patched.text.slice(0, 500)).toBe(200);
    // Behind it, more events than the relay takes in one batch (256): a relay that cannot get
    // past the large event would publish some of them with each retry of its batch, never all.
    for (let k = 0; k < 3; k++) {
      const ops = Array.from({ length: 100 }, (_, i) => ({ method: "create", body: { title: `Behind ${k}.${i}` } }));
      const r = await gw.post("/v1/tasks/batch", { operations: ops }, auth(b));
      expect(r.status, r.text.slice(0, 500)).toBe(200);
    }
    for (let i = 1; i <= 3; i++) {
      const r = await gw.patch(`/v1/tasks/${firstId}`, { title: `Ordinary ${i}` }, auth(b));
      expect(r.status, r.text).toBe(200);
    }

    // The feed has them at once (its trigger writes them with the change); the stream and the
    // webhooks only once the relay got past the large event.
    const fed = await feedIds(b);
    expect(fed).toHaveLength(1 + 300 + 3);
    const streamed = await streamedOf(mark, b, fed.length);
    expect(streamed.map((e) => e.id).sort()).toEqual([...fed].sort());
    // In order: the tasks as they were made, and the first task's events as its versions.
    const made = streamed.filter((e) => e.type === "task.created").map((e) => Number(e.data.id.slice(2)));
    expect(made).toEqual([...made].sort((x, y) => x - y));
    expect(streamed.filter((e) => e.data.id === firstId).map((e) => e.data.version)).toEqual([1, 2, 3, 4]);
    const delivered = await deliveredOf(b, fed.length);
    expect([...delivered.keys()].sort()).toEqual([...fed].sort());

    // The large event itself went out too: its notes in data, their change as lengths.
    const [, updated] = await streamedOf(mark, a, 2);
    expect(updated?.type).toBe("task.updated");
    expect(updated?.data.notes).toBe("\u0001".repeat(100_000));
    expect(updated?.changes?.["notes"]).toEqual({ from_length: null, to_length: 100_000, truncated: true });
    expect(updated?.changes?.["version"]).toEqual({ from: 1, to: 2 });
    expect(bytes(updated)).toBeLessThan(MAX_PAYLOAD);
  }, 120_000);

  it("when a change's values would take the envelope past 256 KiB, then each free-text field's change gives lengths, the others stay whole, and the feed, the stream and the webhook body agree", async () => {
    const t = await f.tenant();
    await endpoint(t);
    const created = await gw.post("/v1/tasks", { title: "Before", notes: "\u0001".repeat(30_000) }, auth(t));
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    const task = bodyOf(created, Task);
    const mark = await events.mark();
    const patched = await gw.patch(
      `/v1/tasks/${task.id}`,
      { title: "After", notes: "\u0002".repeat(30_001), status: "IN_PROGRESS", description: "now described" },
      auth(t),
    );
    expect(patched.status, patched.text.slice(0, 500)).toBe(200);

    const [updated] = await streamedOf(mark, t, 1);
    // Data alone is about 180 KB; with both values of the notes it would be three times that.
    expect(bytes(updated)).toBeLessThan(256 * KIB);
    expect(updated?.data.notes).toBe("\u0002".repeat(30_001));
    expect(updated?.changes).toEqual({
      version: { from: 1, to: 2 },
      title: { from_length: 6, to_length: 5, truncated: true },
      description: { from_length: null, to_length: 13, truncated: true },
      status: { from: "TODO", to: "IN_PROGRESS" },
      notes: { from_length: 30_000, to_length: 30_001, truncated: true },
      updated_at: { from: task.updated_at, to: bodyOf(patched, Task).updated_at },
    });

    const one = await gw.get(`/v1/events/${updated?.id}`, auth(t));
    expect(one.status, one.text.slice(0, 500)).toBe(200);
    expect(one.body["changes"]).toEqual(updated?.changes);
    const delivered = await deliveredOf(t, 2);
    expect(delivered.get(updated?.id ?? "")?.changes).toEqual(updated?.changes);
  }, 60_000);

  it("when the largest task there is (title, description and notes at their limits, of the worst-escaping characters they allow) changes every text, then its envelope gives lengths and stays under NATS's max_payload", async () => {
    const t = await f.tenant();
    const created = await gw.post("/v1/tasks", { title: "\u20ac".repeat(500), description: "\u0001".repeat(10_000), notes: "\u0001".repeat(100_000) }, auth(t));
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    const task = bodyOf(created, Task);
    const mark = await events.mark();
    const patched = await gw.patch(
      `/v1/tasks/${task.id}`,
      { title: "\u20a4".repeat(500), description: "\u0002".repeat(10_000), notes: "\u0002".repeat(100_000) },
      auth(t),
    );
    expect(patched.status, patched.text.slice(0, 500)).toBe(200);

    const [updated] = await streamedOf(mark, t, 1);
    expect(updated?.changes?.["title"]).toEqual({ from_length: 500, to_length: 500, truncated: true });
    expect(updated?.changes?.["description"]).toEqual({ from_length: 10_000, to_length: 10_000, truncated: true });
    expect(updated?.changes?.["notes"]).toEqual({ from_length: 100_000, to_length: 100_000, truncated: true });
    // data: 500 × 3 + 10,000 × 6 + 100,000 × 6 bytes of text, about 662 KB: over 256 KiB, as
    // data needs, and well under the 1 MiB NATS carries.
    const size = bytes(updated);
    expect(size).toBeGreaterThan(660_000);
    expect(size).toBeLessThan(MAX_PAYLOAD - 64 * KIB);
  }, 60_000);
});
