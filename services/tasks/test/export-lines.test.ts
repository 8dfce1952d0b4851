import { actorOf } from "@tasksvc/contracts";
import type { Caller, RpcContext } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { tasksInOrder, versionLinesInOrder } from "../src/domain/exports/chunks.js";
import { exportLines } from "../src/domain/exports/format.js";
import { projectsSystem } from "../src/domain/projects.js";
import { tasksResources } from "../src/domain/resources.js";
import { tasksSystem } from "../src/domain/tasks.js";
import { exportReads } from "../src/repo/export-reads.js";
import { toTask } from "../src/repo/task-json.js";
import { edgeBodies } from "./edge-bodies.js";

// An export's task and version lines are JSON that Postgres builds, while GET and the history route
// answer JSON built in TypeScript: this holds each line byte for byte equal to the API's object
// with `object` put first, over every field and its edge values.
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 4, snapshots: 1 });
afterAll(async () => {
  await db.end({ timeout: 1 });
});

const resources = tasksResources(db);
const svc = tasksSystem(resources);
const projects = projectsSystem(resources);
const OWNER = "usr_export_lines";

function caller(): Caller {
  const org = newId("org");
  const ctx: RpcContext = {
    request_id: "req_export_lines",
    organization_id: org,
    user_id: OWNER,
    credential_id: "key_x",
    scopes: ["tasks:write"],
    plan: "pro",
  };
  return { organizationId: org, userId: OWNER, credentialId: "key_x", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
}

describe("an export's lines as Postgres builds them", () => {
  it("when tasks and their versions hold every field, then each line is the API's object byte for byte with `object` first, and its people get member lines", async () => {
    const c = caller();
    const org = c.organizationId;
    const project = await projects.createProject(c, { name: "p" });
    const other = await projects.createProject(c, { name: "q" });
    const parent = await svc.createTask(c, { title: "parent" });
    const created = [parent];
    for (const b of edgeBodies(project.id, other.id, parent.id)) created.push(await svc.createTask(c, b));
    const changed = created[2]?.id ?? "";
    await svc.updateTask(c, changed, { title: "changed", story_points: 1e-7 });
    await svc.updateTask(c, changed, { status: "COMPLETED" });
    // Values and assignees set directly: their checks against definitions and members are not under test.
    const n = Number(created[1]?.id.slice(2));
    const values = { reviewer: "usr_reviewer", estimate: 12.5, tags: ["a", "b: c"], note: 'say "hi", ok' };
    await db.sql`update tasks set custom_fields = ${db.sql.json(values)}, assignee_ids = '{usr_assignee}' where organization_id = ${org} and number = ${n}`;
    await db.sql`update task_versions set custom_fields = ${db.sql.json(values)}, assignee_ids = '{usr_assignee}' where organization_id = ${org} and task_number = ${n}`;

    const people = new Set<string>();
    let text = "";
    await db.snapshot(async (t) => {
      const reads = exportReads(t);
      for await (const chunk of tasksInOrder(reads, org, (numbers) => reads.taskLines(org, numbers, ["reviewer"])))
        text += exportLines("task", chunk, people).join("");
      for await (const lines of versionLinesInOrder(reads, org, ["reviewer"])) text += exportLines("task_version", lines, people).join("");
    });
    const lines = text.trimEnd().split("\n");

    // The daily series made its first occurrence too.
    const numbers = (await db.sql<{ n: string }[]>`select number::text as n from tasks where organization_id = ${org} order by number`).map((r) => Number(r.n));
    expect(numbers.length).toBeGreaterThan(created.length);
    const taskLines = lines.filter((l) => l.startsWith('{"object":"task",'));
    expect(taskLines).toHaveLength(numbers.length);
    for (const l of taskLines) {
      const row = await resources.repos.tasks.get(org, Number(JSON.parse(l).id.slice(2)));
      expect(row).toBeDefined();
      if (row) expect(l).toBe(JSON.stringify({ object: "task", ...toTask(row) }));
    }
    const versionLines = lines.filter((l) => l.startsWith('{"object":"task_version",'));
    const expected: string[] = [];
    for (const number of numbers) {
      const history = await svc.history(c, `T-${number}`, 100, undefined);
      for (const v of [...history.data].reverse()) expected.push(JSON.stringify({ object: "task_version", task_id: `T-${number}`, ...v }));
    }
    expect(versionLines).toEqual(expected);
    expect(versionLines.length).toBe(numbers.length + 2);
    expect([...people].sort()).toEqual([OWNER, "usr_assignee", "usr_reviewer"].sort());
  });
});
