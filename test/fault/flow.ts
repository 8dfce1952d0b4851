import { api, eventually, factories, startReceiver, type ApiResponse, type StackInfo } from "@tasksvc/testing";
import { expect } from "vitest";

/**
 * The whole product once through the public API, touching every service's database: keys (a new
 * API key), tasks (a project, two tasks, an edit that makes a version, a dependency, the history
 * and the events feed), boards (a plan entry read back with its task), webhooks (an endpoint
 * whose signed deliveries arrive, then its delivery log), the gateway (an Idempotency-Key
 * replayed). Used by the tests that put the services' databases elsewhere: through PgBouncer, or
 * on separate servers. The stack needs WEBHOOK_ALLOW_HTTP and WEBHOOK_ALLOW_PRIVATE_TARGETS (the receiver is local).
 */
export async function endToEndFlow(stack: Pick<StackInfo, "natsUrl" | "namespace">, gatewayUrl: string): Promise<void> {
  const f = factories({ ...stack, gatewayUrls: [gatewayUrl], databaseUrl: "" });
  const rx = await startReceiver();
  const gw = api(gatewayUrl);
  const ok = <T>(r: ApiResponse<T>, status: number, what: string): T => {
    expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(status);
    return r.body;
  };
  try {
    const t = await f.tenant();
    const token = t.apiKey;
    const key = ok(await gw.post("/v1/api-keys", { name: "flow", scopes: ["tasks:read"] }, { token }), 201, "api key");
    expect((await gw.get("/v1/tasks", { token: key.key })).status).toBe(200);

    const endpoint = await rx.endpoint(async (url) => ok(await gw.post("/v1/webhook-endpoints", { url }, { token }), 201, "endpoint"));
    const project = ok(await gw.post("/v1/projects", { name: "Flow" }, { token }), 201, "project");
    const idem = { "Idempotency-Key": `flow-${Date.now()}` };
    const a = ok(await gw.post("/v1/tasks", { title: "first", project_id: project.id }, { token, headers: idem }), 201, "task a");
    const again = await gw.post("/v1/tasks", { title: "first", project_id: project.id }, { token, headers: idem });
    expect(again.body.id, "the retried create answers the same task").toBe(a.id);
    const b = ok(await gw.post("/v1/tasks", { title: "second", priority: "HIGH" }, { token }), 201, "task b");
    ok(await gw.patch(`/v1/tasks/${a.id}`, { status: "IN_PROGRESS" }, { token }), 200, "edit");
    ok(await gw.post(`/v1/tasks/${b.id}/dependencies`, { blocker_task_id: a.id }, { token }), 201, "dependency");
    const history = ok(await gw.get(`/v1/tasks/${a.id}/history`, { token }), 200, "history");
    expect(history.data.length).toBe(2);

    const date = new Date().toISOString().slice(0, 10);
    ok(await gw.post("/v1/daily-plan/entries", { date, task_id: a.id, section: "TODO" }, { token }), 201, "plan entry");
    const board = ok(await gw.get(`/v1/daily-plan?date=${date}`, { token }), 200, "board");
    const planned = board.sections.flatMap((s: { entries: Array<{ task_id: string; task?: { title?: string } }> }) => s.entries);
    expect(planned.map((e: { task_id: string }) => e.task_id)).toEqual([a.id]);

    // Four changes of tasks (two creates, the edit, the dependency) reach the endpoint, signed.
    const got = await rx.waitFor(endpoint.path, 4, 30_000);
    expect(got.every((r) => r.verifiedBy.includes(0))).toBe(true);
    expect(got.map((r) => r.event.type).sort()).toEqual(["task.created", "task.created", "task.updated", "task.updated"]);
    await eventually(
      async () => {
        const log = ok(await gw.get(`/v1/webhook-endpoints/${endpoint.id}/deliveries`, { token }), 200, "deliveries");
        return log.data.filter((d: { state: string }) => d.state === "SUCCEEDED").length === 4;
      },
      { what: "four deliveries logged as succeeded", timeoutMs: 30_000, intervalMs: 250 },
    );
    const events = ok(await gw.get("/v1/events", { token }), 200, "events");
    expect(events.data.length).toBe(4);
  } finally {
    await rx.close();
    await f.close();
  }
}
