import { randomUUID } from "node:crypto";
import { SCOPES, tasksRpc } from "@tasksvc/contracts";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import { e2eContext, type Tenant } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// A keyed create goes straight to its statement, which fails on a recorded key; the record is read
// only then. Sent straight to the tasks service (as a retry does once the gateway's own record is
// gone), every execution of one key must still give one task and the first answer, even when a
// check the first execution passed would now refuse it.
const { gw, f, db, stack } = e2eContext();
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats({ url: stack.natsUrl, name: "test-task-create-keys" });
});
afterAll(async () => {
  await nc?.close();
});

const tasks = () => client(nc, tasksRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
const ctxOf = (t: Tenant, key: string) => ({
  request_id: `req_${randomUUID().replaceAll("-", "")}`,
  organization_id: t.organizationId,
  user_id: t.userId,
  credential_id: `key_create_${t.organizationId}`,
  scopes: [...SCOPES],
  plan: "pro" as const,
  idempotency_key: key,
});
const taskCount = async (t: Tenant) => (await db`select count(*)::int as n from tasks.tasks where organization_id = ${t.organizationId}`)[0]?.["n"];

describe("a keyed create, straight to the tasks service", () => {
  it("when six executions of one key arrive at once, then all answer the same task and one task is stored", async () => {
    const t = await f.tenant();
    const ctx = ctxOf(t, "six-at-once");
    const answers = await Promise.all(Array.from({ length: 6 }, () => tasks().call("createTask", { title: "Once" }, ctx)));
    expect(new Set(answers.map((a) => JSON.stringify(a))).size, JSON.stringify(answers)).toBe(1);
    expect(await taskCount(t)).toBe(1);
  });

  it("when its project is deleted after the first execution, then a retry answers the first task, not a refusal", async () => {
    const t = await f.tenant();
    const project = await gw.post("/v1/projects", { name: `p-${randomUUID()}` }, { token: t.apiKey });
    expect(project.status, project.text).toBe(201);
    const ctx = ctxOf(t, "project-gone");
    const body = { title: "In a project", project_id: project.body.id as string };
    const first = await tasks().call("createTask", body, ctx);
    const removed = await gw.delete(`/v1/projects/${project.body.id}`, { token: t.apiKey });
    expect(removed.status, removed.text).toBe(200);
    expect(await tasks().call("createTask", body, ctx)).toEqual(first);
    // A new key is checked now, and refused.
    await expect(tasks().call("createTask", body, ctxOf(t, "project-gone-new"))).rejects.toMatchObject({ code: "validation_failed" });
    expect(await taskCount(t)).toBe(1);
  });

  it("when its record is past its 24 hours, then the key creates a new task", async () => {
    const t = await f.tenant();
    const ctx = ctxOf(t, "a-day-later");
    const first = (await tasks().call("createTask", { title: "Yesterday" }, ctx)) as { id: string };
    await db`update tasks.idempotency set created_at = now() - interval '25 hours' where credential_id = ${ctx.credential_id} and key = ${ctx.idempotency_key}`;
    const second = (await tasks().call("createTask", { title: "Yesterday" }, ctx)) as { id: string };
    expect(second.id).not.toBe(first.id);
    expect(await taskCount(t)).toBe(2);
  });
});
