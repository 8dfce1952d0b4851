import { randomUUID } from "node:crypto";
import { e2eContext, gatewayUrl, type Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type McpSession, mcpSession, shown } from "./mcp-client.js";

// The MCP server through the SDK's own client: each tool answers what its REST route answers.
const { gw, f, stack } = e2eContext();
const base = gatewayUrl(stack);
// Without PUBLIC_BASE_URL the gateway names itself on localhost at its port.
const publicBase = `http://localhost:${new URL(base).port}`;
const sessions: McpSession[] = [];
afterAll(async () => {
  for (const s of sessions) await s.close();
});
const open = async (token: string) => {
  const s = await mcpSession(base, token);
  sessions.push(s);
  return s;
};
const as = (t: Tenant) => ({ token: t.apiKey });
const DAY = "2031-05-06";

const TOOLS = [
  "search_tasks",
  "get_task",
  "create_task",
  "update_task",
  "archive_task",
  "delete_task",
  "add_comment",
  "list_comments",
  "list_projects",
  "list_labels",
  "list_members",
  "plan_task",
  "get_board",
  "list_notifications",
  "rewind",
];

describe("the MCP session", () => {
  it("when a client initializes and lists tools, then the server names itself and lists every tool with an object input schema", async () => {
    const t = await f.tenant();
    const s = await open(t.apiKey);
    expect(s.client.getServerVersion()).toMatchObject({ name: "tasksvc" });
    expect(s.client.getServerCapabilities()).toMatchObject({ tools: {} });
    const { tools } = await s.client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual([...TOOLS].sort());
    for (const tool of tools) {
      expect(tool.inputSchema.type, tool.name).toBe("object");
      expect(tool.description, tool.name).toMatch(/Costs 1 API call/);
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(Object.keys(byName.get("update_task")?.inputSchema.properties ?? {})).toEqual(
      expect.arrayContaining(["task_id", "title", "if_match", "idempotency_key"]),
    );
    expect(byName.get("get_task")?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(byName.get("delete_task")?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
  });

  it("when every tool is called, then each result's structured content equals the REST answer to the same request", async () => {
    const t = await f.tenant();
    const s = await open(t.apiKey);
    const project = await gw.post("/v1/projects", { name: "Launch" }, as(t));
    const label = await gw.post("/v1/labels", { name: "urgent" }, as(t));
    expect(project.status, project.text).toBe(201);

    const created = await s.call("create_task", { title: "Write the brief", priority: "HIGH", project_ids: [project.body.id], idempotency_key: randomUUID() });
    expect(created.isError, shown(created)).toBeFalsy();
    const id = String(created.structuredContent["id"]);
    const rest = await gw.get(`/v1/tasks/${id}`, as(t));
    expect(created.structuredContent).toEqual(rest.body);
    expect(created.content).toEqual([{ type: "text", text: expect.stringContaining("Write the brief") }]);

    const got = await s.call("get_task", { task_id: id });
    expect(got.structuredContent).toEqual((await gw.get(`/v1/tasks/${id}`, as(t))).body);

    const updated = await s.call("update_task", { task_id: id, title: "Write the short brief", label_ids: [label.body.id], if_match: 1 });
    expect(updated.isError, shown(updated)).toBeFalsy();
    expect(updated.structuredContent).toMatchObject({ title: "Write the short brief", version: 2, label_ids: [label.body.id] });
    expect(updated.structuredContent).toEqual((await gw.get(`/v1/tasks/${id}`, as(t))).body);

    const search = { filter: { field: "title", op: "contains", value: "brief" }, sort: "-created_at", limit: 10 };
    const found = await s.call("search_tasks", search);
    expect(found.structuredContent).toEqual((await gw.post("/v1/tasks/search", search, as(t))).body);
    expect(found.structuredContent["data"]).toHaveLength(1);

    const comment = await s.call("add_comment", { task_id: id, body: "Draft is in the folder.", idempotency_key: randomUUID() });
    expect(comment.isError, shown(comment)).toBeFalsy();
    expect(comment.structuredContent).toEqual((await gw.get(`/v1/tasks/${id}/comments/${comment.structuredContent["id"]}`, as(t))).body);
    const comments = await s.call("list_comments", { task_id: id, limit: 5 });
    expect(comments.structuredContent).toEqual((await gw.get(`/v1/tasks/${id}/comments?limit=5`, as(t))).body);
    expect(comments.structuredContent["data"]).toHaveLength(1);

    for (const [tool, path] of [
      ["list_projects", "/v1/projects"],
      ["list_labels", "/v1/labels"],
      ["list_members", "/v1/members"],
      ["list_notifications", "/v1/notifications"],
    ] as const) {
      const listed = await s.call(tool);
      expect(listed.isError, shown(listed)).toBeFalsy();
      expect(listed.structuredContent, tool).toEqual((await gw.get(path, as(t))).body);
    }
    const unread = await s.call("list_notifications", { unread: true, limit: 3 });
    expect(unread.structuredContent).toEqual((await gw.get("/v1/notifications?unread=true&limit=3", as(t))).body);

    const planned = await s.call("plan_task", { date: DAY, task_id: id, section: "TODO", idempotency_key: randomUUID() });
    expect(planned.isError, shown(planned)).toBeFalsy();
    const board = await s.call("get_board", { date: DAY });
    const restBoard = await gw.get(`/v1/daily-plan?date=${DAY}`, as(t));
    expect(board.structuredContent).toEqual(restBoard.body);
    expect(JSON.stringify(restBoard.body)).toContain(String(planned.structuredContent["id"]));

    // A dry run of undoing everything this key did: the plan, stored and readable like the REST one.
    const keys = await gw.get("/v1/api-keys", as(t));
    const since = new Date(Date.now() - 3_600_000).toISOString();
    const rewind = await s.call("rewind", { match: { credential_id: keys.body.data[0].id, since }, idempotency_key: randomUUID() });
    expect(rewind.isError, shown(rewind)).toBeFalsy();
    expect(rewind.structuredContent).toMatchObject({ dry_run: true, status: "succeeded", items: [{ task_id: id, action: "trash" }] });
    expect(rewind.structuredContent).toEqual((await gw.get(`/v1/rewinds/${rewind.structuredContent["id"]}`, as(t))).body);
    expect((await gw.get(`/v1/tasks/${id}`, as(t))).body).toMatchObject({ version: 2, archived: false });

    const archived = await s.call("archive_task", { task_id: id, if_match: 2 });
    expect(archived.structuredContent).toMatchObject({ archived: true, version: 3 });
    expect(archived.structuredContent).toEqual((await gw.get(`/v1/tasks/${id}`, as(t))).body);

    const deleted = await s.call("delete_task", { task_id: id, idempotency_key: randomUUID() });
    expect(deleted.structuredContent).toMatchObject({ id, deleted_at: expect.any(String), purge_at: expect.any(String) });
    expect((await gw.get(`/v1/tasks/${id}`, as(t))).status).toBe(404);
    const gone = await s.call("get_task", { task_id: id });
    expect(gone.isError).toBe(true);
    expect(gone.structuredContent).toMatchObject({ status: 404, code: "resource_not_found" });
  });

  it("when if_match names an old version, then a tool error precondition_failed and the task is unchanged", async () => {
    const t = await f.tenant();
    const s = await open(t.apiKey);
    const task = await gw.post("/v1/tasks", { title: "Stable" }, as(t));
    const stale = await s.call("update_task", { task_id: task.body.id, title: "Changed", if_match: 7 });
    expect(stale.isError, shown(stale)).toBe(true);
    expect(stale.structuredContent).toMatchObject({ status: 412, code: "precondition_failed" });
    expect((await gw.get(`/v1/tasks/${task.body.id}`, as(t))).body).toMatchObject({ title: "Stable", version: 1 });
  });

  it("when arguments break the contract, then a tool error validation_failed naming each field by the pointer REST names it with", async () => {
    const t = await f.tenant();
    const s = await open(t.apiKey);
    const missing = await s.call("create_task", { priority: "SOMEDAY", colour: "red" });
    expect(missing.isError).toBe(true);
    expect(missing.structuredContent).toMatchObject({ status: 400, code: "validation_failed" });
    const pointers = (missing.structuredContent["errors"] as Array<{ pointer: string }>).map((e) => e.pointer).sort();
    expect(pointers).toEqual(["/colour", "/priority", "/title"]);
    expect(missing.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^validation_failed \(400\): .*\/title/) });
    const noId = await s.call("get_task", {});
    expect(noId.structuredContent).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/task_id" }] });
    const badVersion = await s.call("update_task", { task_id: "T-1", title: "x", if_match: "one" });
    expect(badVersion.structuredContent).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/if_match" }] });
    await expect(s.client.callTool({ name: "no_such_tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
  });

  it("when a key lacks tasks:write, then create_task is a tool error insufficient_scope and reading still works", async () => {
    const t = await f.tenant();
    const key = await gw.post("/v1/api-keys", { name: "reader", scopes: ["tasks:read"] }, as(t));
    expect(key.status, key.text).toBe(201);
    const s = await open(key.body.key);
    const refused = await s.call("create_task", { title: "Not allowed" });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ status: 403, code: "insufficient_scope" });
    expect(refused.content[0]).toMatchObject({ text: expect.stringContaining("insufficient_scope") });
    const read = await s.call("search_tasks", { filter: { field: "archived", op: "eq", value: false } });
    expect(read.isError, shown(read)).toBeFalsy();
    expect(read.structuredContent).toEqual({ data: [], has_more: false, next_cursor: null });
  });
});

describe("the MCP endpoint over HTTP", () => {
  const initialize = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  };
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(new URL("/mcp", base), {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      body: JSON.stringify(body),
    });

  it("when no credential or a refused one is sent, then 401 with WWW-Authenticate pointing at the protected resource metadata", async () => {
    for (const headers of [{}, { authorization: "Bearer svc_live_not_a_key_at_all_0000000000000000" }] as Array<Record<string, string>>) {
      const r = await post(initialize, headers);
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${publicBase}/.well-known/oauth-protected-resource"`);
      expect(r.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    }
  });

  it("when the protected resource metadata is read, then it names /mcp as the resource and this service's own OAuth issuer as its authorization server (RFC 9728)", async () => {
    const r = await gw.get("/.well-known/oauth-protected-resource");
    expect(r.status, r.text).toBe(200);
    const issuer = (await gw.get("/.well-known/oauth-authorization-server")).body.issuer;
    expect(typeof issuer).toBe("string");
    expect(r.body).toMatchObject({
      resource: `${publicBase}/mcp`,
      authorization_servers: [issuer],
      bearer_methods_supported: ["header"],
      scopes_supported: expect.arrayContaining(["tasks:read", "tasks:write"]),
    });
  });

  it("when GET or DELETE is sent to /mcp, then 405 naming POST: the server is stateless and never opens a stream or a session", async () => {
    const t = await f.tenant();
    for (const method of ["GET", "DELETE"]) {
      const r = await gw.request(method, "/mcp", { token: t.apiKey, headers: { accept: "text/event-stream" } });
      expect(r.status, r.text).toBe(405);
      expect(r.headers.get("allow")).toBe("POST");
    }
  });

  it("when the transport refuses a POST (no text/event-stream in Accept, no JSON-RPC message), then 400 malformed_request as a problem", async () => {
    const t = await f.tenant();
    const auth = { authorization: `Bearer ${t.apiKey}` };
    const accept = await post(initialize, { ...auth, accept: "application/json" });
    expect(accept.status).toBe(400);
    expect(accept.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(await accept.json()).toMatchObject({ code: "malformed_request", detail: expect.stringContaining("text/event-stream") });
    const notRpc = await post({ hello: "world" }, auth);
    expect(notRpc.status).toBe(400);
    expect(await notRpc.json()).toMatchObject({ code: "malformed_request" });
  });

  it("when two clients send requests with the same JSON-RPC ids at once, then each gets its own answers under its own ids", async () => {
    const [a, b] = [await f.tenant(), await f.tenant()];
    const call = (id: number, title: string) => ({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "create_task", arguments: { title } },
    });
    const headersOf = (t: Tenant) => ({ authorization: `Bearer ${t.apiKey}`, "mcp-protocol-version": "2025-06-18" });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) => {
        const t = i % 2 === 0 ? a : b;
        return post([call(1, `${i} first`), call(2, `${i} second`)], headersOf(t)).then((r) => r.json() as Promise<Array<Record<string, unknown>>>);
      }),
    );
    answers.forEach((batch, i) => {
      expect(
        batch.map((m) => m["id"]),
        shown(batch),
      ).toEqual([1, 2]);
      expect(batch.map((m) => (m["result"] as { structuredContent: { title: string } }).structuredContent.title)).toEqual([`${i} first`, `${i} second`]);
    });
    expect((await gw.get("/v1/tasks?limit=100", as(a))).body.data).toHaveLength(6);
    expect((await gw.get("/v1/tasks?limit=100", as(b))).body.data).toHaveLength(6);
  });

  it("when a POST carries more JSON-RPC messages than allowed, then 400 naming the body; a batch within the bound is answered", async () => {
    const t = await f.tenant();
    const auth = { authorization: `Bearer ${t.apiKey}`, "mcp-protocol-version": "2025-06-18" };
    const ping = (id: number) => ({ jsonrpc: "2.0", id, method: "ping" });
    const tooMany = await post(
      Array.from({ length: 11 }, (_, i) => ping(i)),
      auth,
    );
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toMatchObject({ code: "validation_failed", errors: [{ pointer: "/" }] });
    const fine = await post([ping(1), ping(2)], auth);
    expect(fine.status).toBe(200);
    expect(await fine.json()).toEqual([
      { jsonrpc: "2.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 2, result: {} },
    ]);
  });
});
