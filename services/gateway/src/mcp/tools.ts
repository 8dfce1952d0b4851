import { IDEMPOTENCY_KEY_PATTERN } from "@tasksvc/contracts";
import { COMPONENT_REF, type Json, NAMED_INPUTS, schemaOf } from "../openapi/schemas.js";
import type { Operation } from "../pipeline/operation.js";

/**
 * The MCP tools, one row each: a tool is the REST operation it names, nothing more. Its arguments,
 * scope, plan, charge, idempotency and answer all come from that operation, so a tool can never
 * drift from the route it mirrors. A new tool is one row.
 */
export const TOOL_TABLE = [
  { name: "search_tasks", operationId: "searchTasks", title: "Search tasks" },
  { name: "get_task", operationId: "getTask", title: "Get a task" },
  { name: "create_task", operationId: "createTask", title: "Create a task" },
  { name: "update_task", operationId: "updateTask", title: "Update a task" },
  { name: "archive_task", operationId: "archiveTask", title: "Archive a task" },
  { name: "delete_task", operationId: "deleteTask", title: "Delete a task" },
  { name: "add_comment", operationId: "createComment", title: "Comment on a task" },
  { name: "list_comments", operationId: "listComments", title: "List a task's comments" },
  { name: "list_projects", operationId: "listProjects", title: "List projects" },
  { name: "list_labels", operationId: "listLabels", title: "List labels" },
  { name: "list_members", operationId: "listMembers", title: "List members" },
  { name: "plan_task", operationId: "addDailyPlanEntry", title: "Plan a task on a day's board" },
  { name: "get_board", operationId: "getDailyPlan", title: "Get a day's board" },
  { name: "list_notifications", operationId: "listNotifications", title: "List your notifications" },
  { name: "rewind", operationId: "createRewind", title: "Undo what a credential, request or batch changed (a dry run unless dry_run is false)" },
] as const;

/** Arguments that are no field of the REST request but its headers. */
export const IDEMPOTENCY_KEY_ARG = "idempotency_key";
export const IF_MATCH_ARG = "if_match";

export interface McpTool {
  name: string;
  title: string;
  description: string;
  inputSchema: Json & { type: "object" };
  annotations: { title: string; readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: false };
  operation: Operation;
  /** Where each argument goes in the REST request. */
  pathArgs: readonly string[];
  queryArgs: readonly string[];
  bodyArgs: readonly string[];
}

type ObjectSchema = { properties?: Record<string, Json>; required?: string[]; $defs?: Record<string, Json> };

const READS = new Set(["searchTasks"]);

const COMPONENT_PREFIX = COMPONENT_REF("");

/** A copy whose references to the OpenAPI document's components point into the tool's own `$defs`, naming each it found. */
function localRefs(node: unknown, found: Set<string>): unknown {
  if (Array.isArray(node)) return node.map((n) => localRefs(n, found));
  if (typeof node !== "object" || node === null) return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) {
    if (k === "$ref" && typeof v === "string" && v.startsWith(COMPONENT_PREFIX)) {
      const name = v.slice(COMPONENT_PREFIX.length);
      found.add(name);
      out[k] = `#/$defs/${name}`;
    } else out[k] = localRefs(v, found);
  }
  return out;
}

/** The components a schema refers to, each with its own references made local too, until none is left out. */
function definitionsFor(found: Set<string>, tool: string): Record<string, Json> {
  const defs: Record<string, Json> = {};
  for (let pending = [...found]; pending.length > 0; ) {
    const name = pending.pop() ?? "";
    if (name in defs) continue;
    const schema = NAMED_INPUTS[name];
    if (schema === undefined) throw new Error(`tool ${tool}: its schema refers to ${name}, which is no named input schema`);
    const more = new Set<string>();
    defs[name] = localRefs(schemaOf(schema, "input"), more) as Json;
    pending = [...pending, ...more];
  }
  return defs;
}

function describe(op: Operation): string {
  const scopes = [op.scope, ...op.alsoScopes].join(" and ");
  const extras = [
    op.idempotent
      ? `Pass ${IDEMPOTENCY_KEY_ARG} (a new UUID per change) to retry safely: a repeated call with the same key answers the first result and costs nothing.`
      : "",
    op.preconditions === "if-match" ? `Pass ${IF_MATCH_ARG} (the task's version) to act only if nobody changed the task since you read it.` : "",
    op.paginated ? "Answers a page: pass its next_cursor as after for the next one." : "",
  ];
  return [`${op.summary}.`, `Needs the scope ${scopes}. Costs ${op.cost}.`, ...extras].filter((s) => s !== "").join(" ");
}

/** The flat argument object: the path's ids, then the query's or the body's fields, as the REST contract states each. */
export function toolOf(row: (typeof TOOL_TABLE)[number], op: Operation): McpTool {
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  const $defs: Record<string, Json> = {};
  const components = new Set<string>();
  const take = (schema: unknown, where: string): string[] => {
    if (schema === undefined) return [];
    const js = schemaOf(schema as Parameters<typeof schemaOf>[0], "input") as ObjectSchema;
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      if (name in properties) throw new Error(`tool ${row.name}: the ${where} field ${name} is also elsewhere in the request`);
      properties[name] = localRefs(s, components) as Json;
    }
    required.push(...(js.required ?? []));
    for (const [name, d] of Object.entries(js.$defs ?? {})) {
      if (name in $defs) throw new Error(`tool ${row.name}: two definitions named ${name}`);
      $defs[name] = d;
    }
    return Object.keys(js.properties ?? {});
  };
  const pathArgs = take(op.params, "path");
  // A GET's query is its arguments; a body-taking operation here has no query of its own.
  const queryArgs = op.body === undefined ? take(op.query, "query") : [];
  const bodyArgs = take(op.body, "body");
  if (op.idempotent)
    properties[IDEMPOTENCY_KEY_ARG] = {
      type: "string",
      pattern: IDEMPOTENCY_KEY_PATTERN.source,
      description: "The REST API's Idempotency-Key: a new value (a UUID) for each new change; the same value retries that change without doing it twice.",
    };
  if (op.preconditions === "if-match")
    properties[IF_MATCH_ARG] = {
      type: "integer",
      minimum: 1,
      description: "The task's version you last read: when the task is at another version, nothing changes and the call fails with precondition_failed.",
    };
  for (const [name, d] of Object.entries(definitionsFor(components, row.name))) {
    if (name in $defs) throw new Error(`tool ${row.name}: two definitions named ${name}`);
    $defs[name] = d;
  }
  const read = op.method === "GET" || READS.has(op.operationId);
  return {
    name: row.name,
    title: row.title,
    description: describe(op),
    inputSchema: {
      type: "object",
      properties,
      ...(required.length === 0 ? {} : { required: [...new Set(required)] }),
      additionalProperties: false,
      ...(Object.keys($defs).length === 0 ? {} : { $defs }),
    },
    annotations: { title: row.title, readOnlyHint: read, destructiveHint: op.method === "DELETE", idempotentHint: read || op.idempotent, openWorldHint: false },
    operation: op,
    pathArgs,
    queryArgs,
    bodyArgs,
  };
}

/** Only the tools whose operation this gateway serves (a test may mount a few resources only); the MCP tests list every tool. */
export function buildTools(operations: readonly Operation[]): McpTool[] {
  return TOOL_TABLE.flatMap((row) => {
    const op = operations.find((o) => o.operationId === row.operationId);
    return op ? [toolOf(row, op)] : [];
  });
}
