import { api, eventually } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { prepareLoadTenants } from "./load.js";
import { seconds, startProcessStack, type ProcessStack } from "./processes.js";

/**
 * The tasks service killed with SIGKILL in the middle of a large undo, then started again. The
 * job's message comes back once its ack wait passes, and the new process goes on with the tasks
 * the rewind has no item for: every task is reverted exactly once (one undo version each).
 */
const TASKS = Number(process.env["FAULT_REWIND_TASKS"] ?? 5_000);
const AGENT = "key_fault_rewind_agent";
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

/** Tasks made by the owner (version 1) and changed by the agent's key (version 2), set-based. */
async function seed(org: string, owner: string, n: number): Promise<void> {
  await sql`
    insert into tasks.tasks (organization_id, number, owner_user_id, current_version_id, version_count, version, title, status, created_at, updated_at)
    select ${org}, g, ${owner}, 'ver_rk2_' || g, 2, 2, 'Changed ' || g, 'COMPLETED', now() - interval '1 minute', now()
    from generate_series(1, ${n}) g`;
  await sql`
    insert into tasks.task_versions (id, organization_id, task_number, seq, version, title, status, project_ids, created_at, actor_type, actor_id, actor_user_id)
    select 'ver_rk1_' || number, organization_id, number, 1, 1, 'Task ' || number, 'TODO', '{}', created_at, 'user', ${owner}, ${owner}
    from tasks.tasks where organization_id = ${org}`;
  await sql`
    insert into tasks.task_versions (id, organization_id, task_number, seq, version, title, status, project_ids, created_at, actor_type, actor_id, actor_user_id)
    select current_version_id, organization_id, number, 2, 2, title, status, '{}', updated_at, 'api_key', ${AGENT}, ${owner}
    from tasks.tasks where organization_id = ${org}`;
  await sql`insert into tasks.org_counters (organization_id, last_number) values (${org}, ${n})`;
}

describe("the tasks service killed during a rewind", () => {
  it("when its only replica gets SIGKILL mid-undo and starts again, then the rewind succeeds with every task reverted exactly once", async () => {
    const gw = api(stack.gatewayUrls[0] as string);
    const [owner] = await prepareLoadTenants(stack, 1);
    if (!owner) throw new Error("no tenant");
    await seed(owner.organizationId, owner.userId, TASKS);
    const as = { token: owner.apiKey };
    const since = new Date(Date.now() - 3600_000).toISOString();
    const started = await gw.post("/v1/rewinds", { match: { credential_id: AGENT, since }, dry_run: false }, { ...as, headers: { "idempotency-key": "kill" } });
    expect(started.status, started.text).toBe(202);
    expect(started.body.status).toBe("running");
    const id = started.body.id as string;

    const itemsOf = async () => Number((await sql`select count(*) as n from tasks.rewind_items where rewind_id = ${id}`)[0]?.["n"]);
    const midway = await eventually(
      async () => {
        const n = await itemsOf();
        return n > 0 && n < TASKS ? n : false;
      },
      { timeoutMs: 60_000, intervalMs: 20, what: "the undo to be part done" },
    );
    const killedAt = Date.now();
    await stack.kill("tasks", 0, "SIGKILL");
    stack.restart("tasks", 0);

    const done = await eventually(
      async () => {
        const r = await gw.get(`/v1/rewinds/${id}`, as);
        if (r.status !== 200) return false;
        expect(r.body.status, r.text).not.toBe("failed");
        return r.body.status === "succeeded" ? r.body : false;
      },
      { timeoutMs: 150_000, intervalMs: 250, what: "the rewind to succeed after the restart" },
    );
    const recovered = Date.now() - killedAt;
    expect(done.counts).toEqual({ reverted: TASKS, trashed: 0, skipped: 0 });
    expect(done.items_truncated).toBe(true);
    const [versions] = await sql`
      select count(*) filter (where actor_type = 'rewind' and actor_id = ${id})::int as undone,
        count(distinct task_number) filter (where actor_type = 'rewind')::int as tasks, max(seq)::int as top
      from tasks.task_versions where organization_id = ${owner.organizationId}`;
    expect(versions).toEqual({ undone: TASKS, tasks: TASKS, top: 3 });
    const [shown] = await sql`
      select count(*) filter (where title = 'Task ' || number and status = 'TODO' and version = 3)::int as restored
      from tasks.tasks where organization_id = ${owner.organizationId}`;
    expect(shown?.["restored"]).toBe(TASKS);
    console.log(`rewind kill -9: ${TASKS} tasks, killed at ${midway}/${TASKS} done, succeeded ${seconds(recovered)} after the kill, every task reverted once`);
    expect(stack.unexpectedExits).toEqual([]);
  });
});
