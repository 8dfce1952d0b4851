import { randomUUID } from "node:crypto";
import { e2eContext, gatewayUrl, type Tenant } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type McpSession, mcpSession, shown } from "./mcp-client.js";

// The MCP server under REST's plans and limits: a tool call costs one API call, the protocol's own
// messages cost nothing, a replayed idempotency_key costs nothing, and limits refuse as tool errors.
const { gw, f, stack } = e2eContext();
const base = gatewayUrl(stack);
const sessions: McpSession[] = [];
afterAll(async () => {
  for (const s of sessions) await s.close();
});
const open = async (token: string) => {
  const s = await mcpSession(base, token);
  sessions.push(s);
  return s;
};
/** Itself one call, counted in what it answers. */
const callsUsed = async (t: Tenant) => {
  const r = await gw.get("/v1/usage", { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return Number(r.body.calls_used);
};

describe("MCP calls and the API-call allowance", () => {
  it("when a session initializes, lists tools and pings, then nothing is charged; each tool call then costs one call", async () => {
    const t = await f.tenant();
    const before = await callsUsed(t);
    const s = await open(t.apiKey);
    await s.client.listTools();
    await s.client.ping();
    expect(await callsUsed(t)).toBe(before + 1);
    await s.call("list_projects");
    await s.call("search_tasks", { filter: { field: "archived", op: "eq", value: false } });
    expect(await callsUsed(t)).toBe(before + 4);
  });

  it("when create_task is repeated with the same idempotency_key, then the same task is answered, one task exists, and the repeat is not charged", async () => {
    const t = await f.tenant();
    const s = await open(t.apiKey);
    const key = randomUUID();
    const before = await callsUsed(t);
    const first = await s.call("create_task", { title: "Once only", idempotency_key: key });
    expect(first.isError, shown(first)).toBeFalsy();
    // The arguments in another order: the tool builds the REST body in the contract's order, so the replay matches.
    const again = await s.call("create_task", { idempotency_key: key, title: "Once only" });
    expect(again.isError, shown(again)).toBeFalsy();
    expect(again.structuredContent).toEqual(first.structuredContent);
    // The first read, the first create; the replay is free.
    expect(await callsUsed(t)).toBe(before + 2);
    const listed = await gw.get("/v1/tasks", { token: t.apiKey });
    expect(listed.body.data).toHaveLength(1);

    const reused = await s.call("create_task", { title: "Another task", idempotency_key: key });
    expect(reused.isError).toBe(true);
    expect(reused.structuredContent).toMatchObject({ status: 422, code: "idempotency_key_reused" });
  });

  it("when the burst limit is spent, then a tool call is a tool error rate_limited carrying the wait, while the protocol itself goes on", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, burst: 3 });
    const s = await open(t.apiKey);
    const task = await s.call("create_task", { title: "Busy" });
    const id = String(task.structuredContent["id"]);
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await s.call("get_task", { task_id: id }));
    const refused = results.filter((r) => r.isError);
    expect(refused.length, shown(results)).toBeGreaterThanOrEqual(3);
    expect(refused[0]?.structuredContent).toMatchObject({ status: 429, code: "rate_limited" });
    expect(refused[0]?.content[0]).toMatchObject({ type: "text", text: expect.stringMatching(/^rate_limited \(429\): .*Retry after \d+ s\.$/) });
    // The protocol itself stays open: listing tools is not charged, so not refused either.
    expect((await s.client.listTools()).tools.length).toBeGreaterThan(0);
  });

  it("when the period's allowance is spent, then a tool call is a tool error quota_exhausted", async () => {
    const t = await f.tenant();
    await f.admin("setLimits", { org: t.organizationId, quota: 2 });
    const s = await open(t.apiKey);
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await s.call("list_labels"));
    const refused = results.filter((r) => r.isError);
    expect(refused.length, shown(results)).toBeGreaterThanOrEqual(2);
    expect(refused.at(-1)?.structuredContent).toMatchObject({ status: 429, code: "quota_exhausted" });
  });
});
