import { e2eContext } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { allTasks, finished, importFile, startImport, uploadFile } from "./import-steps.js";

// CSV imports through HTTP (DESIGN.md section 15): a header row, then one task a row; projects and
// labels by name (made when missing), the assignee by email; each bad row is its own error, with a
// pointer to its column.
const { gw, f } = e2eContext();

const LONG = "x".repeat(501);

describe("CSV imports", () => {
  it("when a CSV file is imported, then every row is a task with its fields, project, labels and assignee, each with a task.created event", async () => {
    const t = await f.tenant();
    const member = await f.user(t.organizationId);
    const existing = await gw.post("/v1/labels", { name: "Bug", color: "#d73a4a" }, { token: t.apiKey });
    expect(existing.status, existing.text).toBe(201);
    const csv = [
      "priority,title,status,due_date,project,labels,assignee,description",
      `HIGH,Write the announcement,IN_PROGRESS,2026-11-30,Launch,bug;frontend,${member.email.toUpperCase()},"Everything, with a comma"`,
      ',"A title with ""quotes""",,,Launch,,,"two',
      'lines"',
      "\r",
      "LOW,Third,,,,Frontend,,",
    ].join("\n");
    const done = await importFile(gw, t, csv);
    expect(done).toMatchObject({ status: "succeeded", dry_run: false, counts: { created: 3, failed: 0 }, errors: [], completed_at: expect.any(String) });
    expect(done.progress).toEqual({ done: Buffer.byteLength(csv), total: Buffer.byteLength(csv) });

    const tasks = await allTasks(gw, t);
    const byTitle = new Map(tasks.map((x) => [x.title, x]));
    const projects = (await gw.get("/v1/projects", { token: t.apiKey })).body.data;
    expect(projects.map((p: { name: string }) => p.name)).toEqual(["Launch"]);
    const labels = (await gw.get("/v1/labels", { token: t.apiKey })).body.data;
    // Matched ignoring case ("bug" is the existing "Bug"), made once when missing.
    expect(labels.map((l: { name: string }) => l.name)).toEqual(["Bug", "frontend"]);
    const label = (name: string) => labels.find((l: { name: string }) => l.name === name).id;
    expect(byTitle.get("Write the announcement")).toMatchObject({
      version: 1,
      status: "IN_PROGRESS",
      priority: "HIGH",
      due_date: "2026-11-30T00:00:00.000Z",
      description: "Everything, with a comma",
      project_ids: [projects[0].id],
      label_ids: [label("Bug"), label("frontend")],
      assignee_ids: [member.userId],
      owner_id: t.userId,
    });
    expect(byTitle.get('A title with "quotes"')).toMatchObject({ status: "TODO", description: "two\nlines", label_ids: [], assignee_ids: [] });
    expect(byTitle.get("Third")).toMatchObject({ priority: "LOW", label_ids: [label("frontend")], project_ids: [] });

    const events = (await gw.get("/v1/events?type=task.created&limit=100", { token: t.apiKey })).body.data;
    expect(events.map((e: { data: { id: string } }) => e.data.id).sort()).toEqual(tasks.map((x) => x.id).sort());
  });

  it("when rows are bad (wrong number of columns, broken quoting, an unknown status, a too-long title, a stranger), then each is an error with its line and column, and the others are imported", async () => {
    const t = await f.tenant();
    const csv = [
      "title,status,assignee,extra",
      "ok one,TODO,,ignored",
      "too few,TODO",
      '"bad"x,TODO,,',
      "unknown status,DONE,,",
      `${LONG},TODO,,`,
      "stranger,TODO,nobody@example.test,",
      "ok two,,,",
    ].join("\n");
    const done = await importFile(gw, t, csv);
    expect(done.status).toBe("succeeded");
    expect(done.counts).toEqual({ created: 2, failed: 5 });
    expect(done.errors).toEqual([
      { line: 1, pointer: "/extra", code: "unknown_column", detail: expect.stringContaining("ignored") },
      { line: 3, pointer: "", code: "invalid_csv", detail: "has 2 values; the header names 4 columns" },
      { line: 4, pointer: "", code: "invalid_csv", detail: expect.stringContaining("closing quote") },
      { line: 5, pointer: "/status", code: "validation_failed", detail: expect.any(String) },
      { line: 6, pointer: "/title", code: "validation_failed", detail: expect.stringContaining("500") },
      { line: 7, pointer: "/assignee", code: "not_a_member", detail: expect.stringContaining("nobody@example.test") },
    ]);
    expect((await allTasks(gw, t)).map((x) => x.title).sort()).toEqual(["ok one", "ok two"]);
  });

  it("when a bad file is a dry run, then every error is reported and nothing is written: no task, project or label", async () => {
    const t = await f.tenant();
    const csv = ["title,status,project,labels", "fine,TODO,New project,new-label", "bad,NOPE,Other project,", `${LONG},,,`, '"open quote,TODO,,'].join("\n");
    const key = await uploadFile(gw, t, csv);
    const started = await startImport(gw, t, key, { dryRun: true });
    expect(started.status, started.text).toBe(202);
    expect(started.body).toMatchObject({ status: "queued", dry_run: true, counts: { created: 0, failed: 0 }, progress: { done: 0, total: csv.length } });
    const done = await finished(gw, t, started.body.id);
    expect(done.counts).toEqual({ created: 1, failed: 3 });
    expect(done.errors.map((e: { line: number; pointer: string; code: string }) => [e.line, e.pointer, e.code])).toEqual([
      [3, "/status", "validation_failed"],
      [4, "/title", "validation_failed"],
      [5, "", "invalid_csv"],
    ]);
    expect(await allTasks(gw, t)).toEqual([]);
    expect((await gw.get("/v1/projects", { token: t.apiKey })).body.data).toEqual([]);
    expect((await gw.get("/v1/labels", { token: t.apiKey })).body.data).toEqual([]);
    // The dry run's file stays importable for real.
    const real = await startImport(gw, t, key);
    expect(real.status, real.text).toBe(202);
  });

  it("when the header has no title column, then the whole file fails with a clear error and nothing is imported", async () => {
    const t = await f.tenant();
    const done = await importFile(gw, t, "name,status\nsomething,TODO\n");
    expect(done).toMatchObject({ status: "failed", counts: { created: 0, failed: 0 } });
    expect(done.errors).toEqual([{ line: 1, pointer: "/title", code: "missing_column", detail: "the header row has no title column" }]);
    expect(await allTasks(gw, t)).toEqual([]);
  });
});
