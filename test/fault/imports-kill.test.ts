import { api, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadTenant, prepareLoadTenants } from "./load.js";
import { seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * The tasks service killed with SIGKILL in the middle of an import of a few thousand lines: its
 * only replica is killed as soon as the import has recorded its first chunk, and started again.
 * The job comes back (its message was never acknowledged) and goes on from the import's recorded
 * line: in the end every line made exactly one task with one task.created event, subtasks under
 * the right parents, and the counts say so.
 */
let stack: ProcessStack;
let sql: postgres.Sql;
let tenant: LoadTenant;

beforeAll(async () => {
  stack = await startProcessStack({ replicas: { gateway: 1, tasks: 1, keys: 1, boards: 1 } });
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  const [t] = await prepareLoadTenants(stack, 1);
  if (!t) throw new Error("no tenant");
  tenant = t;
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

async function upload(format: "csv" | "jsonl", text: string): Promise<string> {
  const gw = api(stack.gatewayUrls[0] as string);
  const contentType = format === "csv" ? "text/csv" : "application/x-ndjson";
  const size = Buffer.byteLength(text);
  const t = await gw.post("/v1/imports/uploads", { file_name: `big.${format}`, content_type: contentType, size }, { token: tenant.apiKey });
  expect(t.status, t.text).toBe(201);
  const put = await fetch(t.body.upload_url, { method: "PUT", body: text, headers: { "content-type": contentType } });
  expect(put.status, await put.text()).toBe(200);
  return t.body.file_key as string;
}

/** Starts the import, kills the tasks replica once a first chunk is recorded, starts it again; answers the finished import. */
async function importThroughKill(format: "csv" | "jsonl", text: string) {
  const gw = api(stack.gatewayUrls[0] as string);
  const key = await upload(format, text);
  const started = await gw.post("/v1/imports", { file_key: key, format }, { token: tenant.apiKey });
  expect(started.status, started.text).toBe(202);
  const id = started.body.id as string;
  const mark = async () => (await sql`select lines_done::int as n, status from tasks.imports where id = ${id}`)[0] as { n: number; status: string };
  let atKill = await mark();
  await eventually(async () => (atKill = await mark()).n > 0, { timeoutMs: 60_000, intervalMs: 5, what: "the import's first chunk" });
  const killedAt = Date.now();
  await stack.kill("tasks", 0, "SIGKILL");
  // Mid-import: lines were left to read when the process died.
  expect(atKill.status, `the import had ${atKill.n} lines done at the kill`).toBe("running");
  stack.restart("tasks", 0);
  const done = await eventually(
    async () => {
      const r = await gw.get(`/v1/imports/${id}`, { token: tenant.apiKey });
      return r.status === 200 && (r.body.status === "succeeded" || r.body.status === "failed") ? r.body : false;
    },
    { timeoutMs: 150_000, intervalMs: 250, what: "the import to finish after the restart" },
  );
  return { done, atKill: atKill.n, tookAfterKill: Date.now() - killedAt };
}

const tasksOf = (org: string) => sql<{ number: string; title: string; parent: string | null }[]>`
  select number::text, title, parent_number::text as parent from tasks.tasks where organization_id = ${org}`;

describe("an import when the tasks service is killed", () => {
  it("when a CSV import of 4,000 rows loses its worker to SIGKILL mid-way, then after the restart every row is one task, none lost, none doubled", async () => {
    const n = 4000;
    const rows = Array.from({ length: n }, (_x, i) => `row ${i + 1},TODO,Project ${i % 7},label-${i % 5};shared`);
    const { done, atKill, tookAfterKill } = await importThroughKill("csv", ["title,status,project,labels", ...rows].join("\n"));
    expect(done, JSON.stringify(done)).toMatchObject({ status: "succeeded", counts: { created: n, failed: 0 }, errors: [] });
    const tasks = await tasksOf(tenant.organizationId);
    const titles = tasks.map((t) => t.title);
    expect(titles.length).toBe(n);
    expect(new Set(titles).size).toBe(n);
    const events = await sql`select count(*)::int as n from tasks.events where organization_id = ${tenant.organizationId} and type = 'task.created'`;
    expect(events[0]?.["n"]).toBe(n);
    const projects = await sql`select count(*)::int as n from tasks.projects where organization_id = ${tenant.organizationId}`;
    expect(projects[0]?.["n"]).toBe(7);
    console.log(`CSV import kill -9: ${n} rows, ${atKill} recorded at the kill; finished ${seconds(tookAfterKill)} after it; lost 0, doubled 0`);
    expect(stack.unexpectedExits).toEqual([]);
  });

  it("when a JSONL import of 3,000 tasks with subtasks loses its worker mid-way, then every task is made once under its own parent", async () => {
    const n = 3000;
    // Heap order: task k's parent is k/2, so every parent comes first, as an export writes them.
    const lines = Array.from({ length: n }, (_x, i) =>
      JSON.stringify({
        object: "task",
        id: `T-${i + 1}`,
        title: `node ${i + 1}`,
        status: "TODO",
        parent_task_id: i === 0 ? null : `T-${Math.floor((i + 1) / 2)}`,
      }),
    );
    // A second organization, so its tasks are only this import's.
    const [second] = await prepareLoadTenants(stack, 1);
    if (!second) throw new Error("no tenant");
    tenant = second;
    const { done, atKill, tookAfterKill } = await importThroughKill("jsonl", lines.join("\n"));
    expect(done, JSON.stringify(done)).toMatchObject({ status: "succeeded", counts: { created: n, failed: 0 }, errors: [] });
    const tasks = await tasksOf(tenant.organizationId);
    expect(tasks.length).toBe(n);
    const byNumber = new Map(tasks.map((t) => [t.number, t]));
    const titleOf = (num: string | null) => (num === null ? null : (byNumber.get(num)?.title ?? "missing"));
    const wrong = tasks.filter((t) => {
      const k = Number(t.title.slice("node ".length));
      return titleOf(t.parent) !== (k === 1 ? null : `node ${Math.floor(k / 2)}`);
    });
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(new Set(tasks.map((t) => t.title)).size).toBe(n);
    console.log(
      `JSONL import kill -9: ${n} tasks in a tree, ${atKill} recorded at the kill; finished ${seconds(tookAfterKill)} after it; lost 0, doubled 0, parents right`,
    );
    expect(stack.unexpectedExits).toEqual([]);
  });
});
