import { createClient, TasksvcError, unwrap } from "@tasksvc/client";
import { e2eContext, gatewayUrl, rejectionOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The typed client and conditional writes: If-Match is a typed header of the task writes, a 412
// comes back as a TasksvcError that carries the current ETag, and the read-modify-write loop a
// client writes with it ends with every edit applied once.

const { stack, f } = e2eContext();

describe("the typed client with versions", () => {
  it("when two editors PATCH from the same version, then the second gets precondition_failed with the current ETag, reads again and succeeds", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });
    const task = unwrap(await api.POST("/v1/tasks", { body: { title: "Shared" } }));
    const etag = `"${task.version}"`;
    const first = await api.PATCH("/v1/tasks/{task_id}", { params: { path: { task_id: task.id }, header: { "If-Match": etag } }, body: { notes: "first" } });
    expect(unwrap(first).version).toBe(2);
    expect(first.response.headers.get("etag")).toBe('"2"');

    const second = await api.PATCH("/v1/tasks/{task_id}", {
      params: { path: { task_id: task.id }, header: { "If-Match": etag } },
      body: { title: "Shared, renamed" },
    });
    const refused = await rejectionOf(() => unwrap(second), TasksvcError);
    expect(refused).toBeInstanceOf(TasksvcError);
    expect(refused.status).toBe(412);
    expect(refused.code).toBe("precondition_failed");
    expect(refused.etag).toBe('"2"');

    // Read again, apply the edit to what is there, write with the new ETag.
    const again = await api.GET("/v1/tasks/{task_id}", { params: { path: { task_id: task.id } } });
    const current = unwrap(again);
    const third = unwrap(
      await api.PATCH("/v1/tasks/{task_id}", {
        params: { path: { task_id: task.id }, header: { "If-Match": again.response.headers.get("etag") ?? "" } },
        body: { title: "Shared, renamed" },
      }),
    );
    expect(third).toMatchObject({ version: 3, title: "Shared, renamed", notes: current.notes });
  });
});

describe("the typed client's batches", () => {
  it("when 250 writes are sent, then they go as batches of at most 100, in order, and each result answers its operation", async () => {
    const t = await f.tenant();
    // 250 items count 250 calls against the burst (one per item): more than the plan's 120.
    await f.admin("setLimits", { org: t.organizationId, burst: 1000 });
    const api = createClient({ baseUrl: gatewayUrl(stack), token: t.apiKey, retries: 0 });
    const calls: number[] = [];
    api.use({
      onRequest({ request }) {
        if (request.url.endsWith("/v1/tasks/batch")) calls.push(1);
        return request;
      },
    });
    const creates = Array.from({ length: 200 }, (_, i) => ({ method: "create" as const, body: { title: `Imported ${i}` } }));
    // Updates of tasks the same call creates, in a later batch: order holds across batches.
    const updates = Array.from({ length: 50 }, (_, i) => ({ method: "update" as const, task_id: `T-${i + 1}`, body: { status: "IN_PROGRESS" as const } }));
    const results = await api.batchTasks([...creates, ...updates]);
    expect(calls).toHaveLength(3);
    expect(results).toHaveLength(250);
    expect(results.slice(0, 200).every((r) => r.status === 201)).toBe(true);
    expect(results.slice(200).every((r) => r.status === 200)).toBe(true);
    expect((results[0]?.body as { id?: string } | undefined)?.id).toBe("T-1");
    expect((results[250 - 1]?.body as { status?: string } | undefined)?.status).toBe("IN_PROGRESS");
  });
});
