import { randomUUID } from "node:crypto";
import { createClient, JobTimeoutError, unwrap } from "@tasksvc/client";
import { e2eContext, gatewayUrl } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The typed client's waitForJob against the running stack: it looks at a job until it is over,
// answers a failed one as it stands, and gives up at its deadline or when asked to.
const { stack, f, db } = e2eContext();
const baseUrl = gatewayUrl(stack);

/** An export row of its own that no message will ever run. */
async function parked(org: string, user: string, status: "queued" | "failed"): Promise<string> {
  const id = `exp_parked_${randomUUID().slice(0, 8)}`;
  await db`insert into tasks.exports (id, organization_id, requested_by, format, include, status, error_code, error_detail, completed_at)
    values (${id}, ${org}, ${user}, 'jsonl', '{tasks}', ${status}, ${status === "failed" ? "internal_error" : null},
      ${status === "failed" ? "The export failed 5 times; ask for a new one." : null}, ${status === "failed" ? new Date() : null})`;
  return id;
}

describe("@tasksvc/client waitForJob", () => {
  it("when an export is asked for, then waitForJob answers it once it succeeded, with each look reported", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    unwrap(await api.POST("/v1/tasks", { body: { title: "to export" } }));
    const started = unwrap(await api.POST("/v1/exports", { body: { format: "jsonl" } }));
    const looks: string[] = [];
    const done = await api.waitForJob("/v1/exports/{export_id}", { export_id: started.id }, { intervalMs: 50, onProgress: (j) => looks.push(j.status) });
    expect(done).toMatchObject({ id: started.id, status: "succeeded", progress: { done: 1, total: 1 }, download_url: expect.any(String) });
    expect(looks.at(-1)).toBe("succeeded");
  });

  it("when the job failed, then waitForJob answers it at once with its error", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    const id = await parked(t.organizationId, t.userId, "failed");
    const failed = await api.waitForJob("/v1/exports/{export_id}", { export_id: id }, { timeoutMs: 5000 });
    expect(failed).toMatchObject({ status: "failed", error: { code: "internal_error" }, download_url: null });
  });

  it("when the job is still waiting at the deadline, then a JobTimeoutError carries it as it stood; an abort stops waiting too", async () => {
    const t = await f.tenant();
    const api = createClient({ baseUrl, token: t.apiKey });
    const id = await parked(t.organizationId, t.userId, "queued");
    const timedOut = await api.waitForJob("/v1/exports/{export_id}", { export_id: id }, { timeoutMs: 300, intervalMs: 50 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(timedOut).toBeInstanceOf(JobTimeoutError);
    expect((timedOut as JobTimeoutError).job).toMatchObject({ id, status: "queued" });
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    await expect(api.waitForJob("/v1/exports/{export_id}", { export_id: id }, { signal: stop.signal, intervalMs: 50 })).rejects.toThrow();
    expect(stop.signal.aborted).toBe(true);
  });
});
