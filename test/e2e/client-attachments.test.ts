import { createClient, TasksvcError, unwrap } from "@tasksvc/client";
import { e2eContext, gatewayUrl, rejectionOf } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// The typed client's uploadAttachment against the running stack (the built-in store: the link is
// the gateway's): one call starts the upload, PUTs the bytes and registers the file.
const { stack, f } = e2eContext();
const baseUrl = gatewayUrl(stack);

/** A fetch that records each request (method, path, whether it carried a credential), and can lose one answer. */
function watchedFetch(lose?: (r: Request) => boolean) {
  const seen: Array<{ method: string; path: string; credential: boolean; status: number }> = [];
  let lost = 0;
  const fetcher = async (input: string | URL | Request, init?: RequestInit) => {
    const request = new Request(input, init);
    const res = await fetch(request);
    seen.push({ method: request.method, path: new URL(request.url).pathname, credential: request.headers.has("authorization"), status: res.status });
    if (lost === 0 && lose?.(request)) {
      lost++;
      await res.arrayBuffer();
      // What undici throws when the socket closes before the answer (the request reached the server).
      throw new TypeError("fetch failed", { cause: new Error("other side closed") });
    }
    return res;
  };
  return { fetch: fetcher as typeof fetch, seen };
}

/** The bytes an attachment's download link answers. */
async function downloaded(api: ReturnType<typeof createClient>, taskId: string, attachmentId: string): Promise<string> {
  const link = unwrap(
    await api.GET("/v1/tasks/{task_id}/attachments/{attachment_id}/download", { params: { path: { task_id: taskId, attachment_id: attachmentId } } }),
  );
  return (await fetch(link.download_url)).text();
}

describe("@tasksvc/client uploadAttachment", () => {
  it("when a file is uploaded in one call, then it is registered on the task, its bytes download as sent, and the link got no credential", async () => {
    const t = await f.tenant();
    const net = watchedFetch();
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch });
    const task = unwrap(await api.POST("/v1/tasks", { body: { title: "With notes" } }));
    const attachment = await api.uploadAttachment(task.id, { file_name: "notes.txt", content_type: "text/plain", data: "hello, file\n" });
    expect(attachment).toMatchObject({ id: expect.stringMatching(/^att_/), file_name: "notes.txt", content_type: "text/plain", size: 12 });
    const listed = unwrap(await api.GET("/v1/tasks/{task_id}/attachments", { params: { path: { task_id: task.id } } }));
    expect(listed.data.map((a) => a.id)).toEqual([attachment.id]);
    expect(await downloaded(api, task.id, attachment.id)).toBe("hello, file\n");
    const steps = net.seen.filter((s) => s.path !== "/v1/tasks" && !s.path.endsWith("/download"));
    expect(steps.slice(0, 3)).toEqual([
      { method: "POST", path: `/v1/tasks/${task.id}/attachments/uploads`, credential: true, status: 201 },
      { method: "PUT", path: expect.stringMatching(/^\/v1\/uploads\//), credential: false, status: 200 },
      { method: "POST", path: `/v1/tasks/${task.id}/attachments`, credential: true, status: 201 },
    ]);
  });

  it("when the PUT's answer is lost after the bytes arrived, then the retried PUT finds them received (409) and the file is registered all the same", async () => {
    const t = await f.tenant();
    const net = watchedFetch((r) => r.method === "PUT");
    const api = createClient({ baseUrl, token: t.apiKey, fetch: net.fetch, maxDelayMs: 200 });
    const task = unwrap(await api.POST("/v1/tasks", { body: { title: "Flaky network" } }));
    const bytes = new TextEncoder().encode("twice sent, once stored");
    const attachment = await api.uploadAttachment(task.id, { file_name: "once.bin", content_type: "application/octet-stream", data: bytes });
    expect(attachment.size).toBe(bytes.length);
    expect(net.seen.filter((s) => s.method === "PUT").map((s) => s.status)).toEqual([200, 409]);
    expect(await downloaded(api, task.id, attachment.id)).toBe("twice sent, once stored");
  });

  it("when a step is refused (no such task, a file over the plan's size), then a TasksvcError with the problem's code, and nothing is attached", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, max_file_size: 16 });
    const api = createClient({ baseUrl, token: t.apiKey });
    const missing = await rejectionOf(api.uploadAttachment("T-999", { file_name: "a.txt", content_type: "text/plain", data: "a" }), TasksvcError);
    expect(missing).toBeInstanceOf(TasksvcError);
    expect(missing.code).toBe("resource_not_found");
    const task = unwrap(await api.POST("/v1/tasks", { body: { title: "Small plan" } }));
    const big = await rejectionOf(
      api.uploadAttachment(task.id, { file_name: "big.bin", content_type: "application/octet-stream", data: new Blob([new Uint8Array(17)]) }),
      TasksvcError,
    );
    expect(big).toBeInstanceOf(TasksvcError);
    expect(big.code).toBe("validation_failed");
    expect(unwrap(await api.GET("/v1/tasks/{task_id}/attachments", { params: { path: { task_id: task.id } } })).data).toEqual([]);
  });
});
