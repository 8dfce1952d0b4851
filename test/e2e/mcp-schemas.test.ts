import { e2eContext, gatewayUrl } from "@tasksvc/testing";
import { afterAll, describe, expect, it } from "vitest";
import { mcpSession } from "./mcp-client.js";

// Each tool's arguments are its REST operation's, as the served OpenAPI document states them: the
// path's ids and the query's fields (or the body's), flat, plus idempotency_key and if_match where
// the operation takes Idempotency-Key and If-Match. The mapping below is the design's, stated here
// independently of the server's own table.
const { gw, f, stack } = e2eContext();

const MIRRORS: Record<string, { method: string; path: string }> = {
  search_tasks: { method: "post", path: "/v1/tasks/search" },
  get_task: { method: "get", path: "/v1/tasks/{task_id}" },
  create_task: { method: "post", path: "/v1/tasks" },
  update_task: { method: "patch", path: "/v1/tasks/{task_id}" },
  archive_task: { method: "post", path: "/v1/tasks/{task_id}/archive" },
  delete_task: { method: "delete", path: "/v1/tasks/{task_id}" },
  add_comment: { method: "post", path: "/v1/tasks/{task_id}/comments" },
  list_comments: { method: "get", path: "/v1/tasks/{task_id}/comments" },
  list_projects: { method: "get", path: "/v1/projects" },
  list_labels: { method: "get", path: "/v1/labels" },
  list_members: { method: "get", path: "/v1/members" },
  plan_task: { method: "post", path: "/v1/daily-plan/entries" },
  get_board: { method: "get", path: "/v1/daily-plan" },
  list_notifications: { method: "get", path: "/v1/notifications" },
  rewind: { method: "post", path: "/v1/rewinds" },
};

type Json = Record<string, unknown>;
const isJson = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const DOCS = new Set(["description", "examples", "example"]);

/** The differences between two schemas, each read in its own document ($refs followed; a pair of refs already being compared is equal). */
function differences(a: unknown, aRoot: Json, b: unknown, bRoot: Json, at: string, seen = new Set<string>()): string[] {
  const resolve = (s: unknown, root: Json): [unknown, string | undefined] => {
    if (!isJson(s) || typeof s["$ref"] !== "string") return [s, undefined];
    const ref = s["$ref"];
    let target: unknown = root;
    for (const part of ref.replace(/^#\//, "").split("/")) target = isJson(target) ? target[part] : undefined;
    return [target, ref];
  };
  const [ra, refA] = resolve(a, aRoot);
  const [rb, refB] = resolve(b, bRoot);
  if (refA !== undefined || refB !== undefined) {
    const pair = `${refA} ${refB}`;
    if (seen.has(pair)) return [];
    seen = new Set([...seen, pair]);
  }
  if (Array.isArray(ra) && Array.isArray(rb)) {
    if (ra.length !== rb.length) return [`${at}: ${ra.length} items against ${rb.length}`];
    return ra.flatMap((x, i) => differences(x, aRoot, rb[i], bRoot, `${at}/${i}`, seen));
  }
  if (isJson(ra) && isJson(rb)) {
    const keys = new Set([...Object.keys(ra), ...Object.keys(rb)].filter((k) => !DOCS.has(k)));
    return [...keys].flatMap((k) => differences(ra[k], aRoot, rb[k], bRoot, `${at}/${k}`, seen));
  }
  return JSON.stringify(ra) === JSON.stringify(rb) ? [] : [`${at}: ${JSON.stringify(ra)} against ${JSON.stringify(rb)}`];
}

describe("MCP tool input schemas", () => {
  const sessions: Array<{ close(): Promise<void> }> = [];
  afterAll(async () => {
    for (const s of sessions) await s.close();
  });

  it("when each tool's inputSchema is compared with its REST operation in the OpenAPI document, then the fields, their schemas and what is required are the same", async () => {
    const t = await f.tenant();
    const s = await mcpSession(gatewayUrl(stack), t.apiKey);
    sessions.push(s);
    const { tools } = await s.client.listTools();
    const doc = (await gw.get("/v1/openapi.json")).body as Json;
    expect(tools.map((tool) => tool.name).sort()).toEqual(Object.keys(MIRRORS).sort());
    const problems: string[] = [];
    for (const tool of tools) {
      const mirror = MIRRORS[tool.name];
      const op = (doc["paths"] as Record<string, Record<string, Json>>)[mirror?.path ?? ""]?.[mirror?.method ?? ""];
      if (!op) {
        problems.push(`${tool.name}: no operation ${mirror?.method} ${mirror?.path}`);
        continue;
      }
      const schema = tool.inputSchema as Json & { properties: Record<string, Json>; required?: string[] };
      const expected: Record<string, unknown> = {};
      const required = new Set<string>();
      const headers = new Set<string>();
      for (const p of (op["parameters"] as Json[]) ?? []) {
        if (p["in"] === "header") headers.add(String(p["name"]));
        // A body-taking operation's query is no argument (none of the mirrored ones has one).
        if (p["in"] === "path" || (p["in"] === "query" && op["requestBody"] === undefined)) {
          expected[String(p["name"])] = p["schema"];
          if (p["required"] === true) required.add(String(p["name"]));
        }
      }
      const bodyRef = ((op["requestBody"] as Json | undefined)?.["content"] as Record<string, Json> | undefined)?.["application/json"]?.["schema"];
      if (bodyRef !== undefined) {
        const components = (doc["components"] as Json)["schemas"] as Record<string, Json>;
        const body = components[
          String((bodyRef as Json)["$ref"])
            .split("/")
            .pop() ?? ""
        ] as Json;
        for (const [name, field] of Object.entries((body["properties"] as Json) ?? {})) expected[name] = field;
        for (const name of (body["required"] as string[]) ?? []) required.add(name);
      }
      if (headers.has("Idempotency-Key")) expected["idempotency_key"] = schema.properties["idempotency_key"];
      if (headers.has("If-Match")) expected["if_match"] = schema.properties["if_match"];
      expect(Object.keys(schema.properties).sort(), tool.name).toEqual(Object.keys(expected).sort());
      expect([...(schema.required ?? [])].sort(), tool.name).toEqual([...required].sort());
      expect(schema["additionalProperties"], tool.name).toBe(false);
      for (const [name, value] of Object.entries(expected)) problems.push(...differences(schema.properties[name], schema, value, doc, `${tool.name}.${name}`));
      if (headers.has("Idempotency-Key")) expect(schema.properties["idempotency_key"]?.["pattern"], tool.name).toBe("^[\\x21-\\x7E]{1,255}$");
    }
    expect(problems).toEqual([]);
  });
});
