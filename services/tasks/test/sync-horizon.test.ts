import { newId } from "@tasksvc/db";
import postgres from "postgres";
import { afterAll, describe, expect, inject, it } from "vitest";
import { SERVICE_STAMP } from "../src/domain/stamps.js";
import { taskSearch } from "../src/repo/task-search.js";
import { tasksRepo } from "../src/repo/tasks-repo.js";

// The sync order (updated_at ascending) stops at the oldest open transaction of the service,
// found by the connections' application_name. A reader whose connection is named otherwise (an
// operator's pool, a pooler that drops the name) found none: the missing horizon reached the
// driver as a date it could not encode, which broke the connection and left the pool hanging.
const stack = inject("stack");
const sql = postgres(stack.databaseUrl, { max: 1, onnotice: () => {}, connection: { search_path: "tasks", application_name: "not-the-service" } });
afterAll(async () => {
  await sql.end({ timeout: 1 });
});

describe("the sync order read by a connection not named like the service's", () => {
  it("when no transaction of the service is open, then the page answers up to now, and the connection keeps answering", async () => {
    const org = newId("org");
    const owner = "usr_sync_horizon";
    const content = {
      title: "Sync",
      description: null,
      status: "TODO" as const,
      priority: null,
      start_date: null,
      due_date: null,
      notes: null,
      story_points: null,
      recurrence: null,
      project_ids: [],
      assignee_ids: [],
      label_ids: [],
      custom_fields: {},
      parent_number: null,
    };
    await tasksRepo(sql).create(org, [
      { owner, content, versionId: newId("ver"), eventId: newId("evt"), credentialId: null, actor: owner, by: SERVICE_STAMP, key: null },
      { owner, content, versionId: newId("ver"), eventId: newId("evt"), credentialId: null, actor: owner, by: SERVICE_STAMP, key: null },
    ]);
    const search = taskSearch(sql);
    for (let round = 0; round < 3; round++) {
      const page = (await search.page(org, { filter: undefined, sort: "updated_at", limit: 10 })).parse();
      expect(page.data.map((t) => t.id)).toEqual(["T-1", "T-2"]);
    }
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
  });
});
