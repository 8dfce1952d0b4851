import { e2eContext, gatewayUrl, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";
import { shown } from "./mcp-client.js";
import { makeClient, tokenFor } from "./oauth-helpers.js";

// A plain tools/call is answered by the tool without the SDK's protocol object, and anything else
// by the protocol object: both must answer alike, and the tool's REST request must run as the
// credential of the MCP request, whatever kind it is.
const { gw, f, stack } = e2eContext();
const base = gatewayUrl(stack);
type Message = Record<string, unknown>;

const post = async (token: string, body: unknown): Promise<{ status: number; body: unknown }> => {
  const r = await fetch(new URL("/mcp", base), {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
};
const call = (id: number | string, params: Message) => ({ jsonrpc: "2.0", id, method: "tools/call", params });
const resultOf = (m: unknown) => (m as { result: { structuredContent: Message; content: Message[]; isError?: boolean } }).result;

describe("tool calls with and without the protocol object", () => {
  it("when the same get_task is sent plainly and with a progress token (which the protocol object answers), then both results are the same and equal to REST", async () => {
    const t = await f.tenant();
    const task = (await gw.post("/v1/tasks", { title: 'Say "hi" \u2028 to 世界', notes: "x".repeat(5_000) }, { token: t.apiKey })).body;
    const rest = (await gw.get(`/v1/tasks/${task.id}`, { token: t.apiKey })).body;
    const plain = await post(t.apiKey, call("a-1", { name: "get_task", arguments: { task_id: task.id } }));
    const viaSdk = await post(t.apiKey, call(7, { name: "get_task", arguments: { task_id: task.id }, _meta: { progressToken: 1 } }));
    expect(plain.status).toBe(200);
    expect((plain.body as Message)["id"]).toBe("a-1");
    expect((viaSdk.body as Message)["id"]).toBe(7);
    expect(resultOf(plain.body).structuredContent).toEqual(rest);
    expect(resultOf(plain.body)).toEqual(resultOf(viaSdk.body));
  });

  it("when a refused call is sent both ways, then both are the same tool error carrying the problem", async () => {
    const t = await f.tenant();
    const args = { task_id: "T-999999" };
    const plain = resultOf((await post(t.apiKey, call(1, { name: "get_task", arguments: args }))).body);
    const viaSdk = resultOf((await post(t.apiKey, call(1, { name: "get_task", arguments: args, _meta: {} }))).body);
    expect(plain.isError).toBe(true);
    expect(plain.structuredContent).toMatchObject({ code: "resource_not_found", status: 404 });
    expect({ ...plain, structuredContent: { ...plain.structuredContent, request_id: null } }).toEqual({
      ...viaSdk,
      structuredContent: { ...viaSdk.structuredContent, request_id: null },
    });
  });

  it("when a tool is unknown, then a JSON-RPC invalid-params error, as the protocol object answers it; arguments that are no object are the protocol object's to refuse", async () => {
    const t = await f.tenant();
    const unknown = (await post(t.apiKey, call(3, { name: "no_such_tool", arguments: {} }))).body as Message;
    expect(unknown).toMatchObject({ jsonrpc: "2.0", id: 3, error: { code: -32602, message: expect.stringContaining("Unknown tool: no_such_tool") } });
    const viaSdk = (await post(t.apiKey, call(3, { name: "no_such_tool", _meta: {} }))).body as Message;
    expect(viaSdk).toEqual(unknown);
    const notAnObject = (await post(t.apiKey, call(4, { name: "get_task", arguments: ["T-1"] }))).body as Message;
    expect(notAnObject).toMatchObject({ jsonrpc: "2.0", id: 4, error: { code: expect.any(Number), message: expect.any(String) } });
    expect(notAnObject).not.toHaveProperty("result");
  });

  it("when a batch mixes tool calls, a listing and a notification, then each request is answered once, in the order sent, under its own id", async () => {
    const t = await f.tenant();
    const task = (await gw.post("/v1/tasks", { title: "Batched" }, { token: t.apiKey })).body;
    const r = await post(t.apiKey, [
      call(1, { name: "get_task", arguments: { task_id: task.id } }),
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "tools/list" },
      call(3, { name: "get_task", arguments: { task_id: task.id }, _meta: { progressToken: "p" } }),
      call(4, { name: "search_tasks", arguments: { filter: { field: "archived", op: "eq", value: false }, limit: 5 } }),
    ]);
    const batch = r.body as Message[];
    expect(
      batch.map((m) => m["id"]),
      shown(batch),
    ).toEqual([1, 2, 3, 4]);
    expect(resultOf(batch[0]).structuredContent["id"]).toBe(task.id);
    expect((batch[1] as { result: { tools: unknown[] } }).result.tools.length).toBeGreaterThan(10);
    expect(resultOf(batch[2])).toEqual(resultOf(batch[0]));
    expect(
      (resultOf(batch[3]).structuredContent["data"] as Message[] | undefined)?.map((x) => x["id"]),
      shown(batch[3]),
    ).toEqual([task.id]);
  });

  it("when the MCP request carries an access token, then its tool call writes as that client, and a revoked token is refused before any tool runs", async () => {
    const t: Tenant = await f.tenant();
    const client = await makeClient(gw, t);
    const token = await tokenFor(gw, client);
    const created = resultOf((await post(token, call(1, { name: "create_task", arguments: { title: "By a machine" } }))).body);
    expect(created.isError, shown(created)).toBeUndefined();
    const history = (await gw.get(`/v1/tasks/${String(created.structuredContent["id"])}/history`, { token: t.apiKey })).body;
    expect(history.data[0].actor).toMatchObject({ type: "oauth_client", id: client.id });
    const revoked = await gw.request("DELETE", `/v1/oauth-clients/${client.id}`, { token: t.apiKey });
    expect(revoked.status, revoked.text).toBe(200);
    expect((await post(token, call(2, { name: "search_tasks", arguments: {} }))).status).toBe(401);
  });

  it("when a read tool's scope is missing, then a tool error insufficient_scope as REST answers it, and a tool of a scope it has answers", async () => {
    const t = await f.tenant();
    const key = await gw.post("/v1/api-keys", { name: "projects only", scopes: ["projects:read"] }, { token: t.apiKey });
    expect(key.status, key.text).toBe(201);
    const token = String(key.body.key);
    const refused = resultOf((await post(token, call(1, { name: "get_task", arguments: { task_id: "T-1" } }))).body);
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ status: 403, code: "insufficient_scope" });
    const rest = await gw.get("/v1/tasks/T-1", { token });
    expect(rest.status).toBe(403);
    expect({ ...refused.structuredContent, request_id: null }).toEqual({ ...rest.body, request_id: null });
    const projects = resultOf((await post(token, call(2, { name: "list_projects", arguments: {} }))).body);
    expect(projects.isError, shown(projects)).toBeUndefined();
  });

  it("when search_tasks pages with next_cursor, then each page equals REST's and the cursor is good for REST as well", async () => {
    const t = await f.tenant();
    for (const title of ["one", "two", "three"]) await gw.post("/v1/tasks", { title }, { token: t.apiKey });
    const filter = { field: "archived", op: "eq", value: false };
    const first = resultOf((await post(t.apiKey, call(1, { name: "search_tasks", arguments: { filter, limit: 2 } }))).body).structuredContent;
    expect(first["has_more"], shown(first)).toBe(true);
    const after = String(first["next_cursor"]);
    const second = resultOf((await post(t.apiKey, call(2, { name: "search_tasks", arguments: { filter, limit: 2, after } }))).body).structuredContent;
    const rest = await gw.post("/v1/tasks/search", { filter, limit: 2, after }, { token: t.apiKey });
    expect(rest.status, rest.text).toBe(200);
    expect(second).toEqual(rest.body);
    expect((second["data"] as Message[]).map((x) => x["title"])).toEqual(["one"]);
    const forged = resultOf((await post(t.apiKey, call(3, { name: "search_tasks", arguments: { filter, limit: 2, after: `${after}x` } }))).body);
    expect(forged.structuredContent).toMatchObject({ status: 400, errors: [{ pointer: "/after" }] });
  });
});
