import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AppError, toProblem } from "@tasksvc/errors";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { IDEMPOTENCY_KEY_ARG, IF_MATCH_ARG, type McpTool } from "./tools.js";

/** What of the MCP request travels with each REST request it makes: the same credential, address, client and request id. */
export interface Caller {
  authorization: string;
  ip: string;
  userAgent: string | undefined;
  /** Headers that make the REST request run under the MCP request's id. */
  inner: Record<string, string>;
}

type Json = Record<string, unknown>;

const isRecord = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** A refusal before any REST request, shaped as the REST API's own 400 (and, like a header the REST API cannot parse, not charged). */
export class ArgumentError extends AppError {
  constructor(pointer: string, message: string) {
    super("validation_failed", `The tool's arguments are invalid: ${pointer.slice(1)} ${message}.`, { errors: [{ pointer, message }] });
  }
}

/** The parts of the REST request a tool call stands for: path parameters, query, body and the headers its arguments name. */
export interface RestParts {
  params: Record<string, string>;
  query: Record<string, string>;
  body: Json | undefined;
  headers: Record<string, string>;
}

/**
 * The REST request a tool call stands for. Arguments the tool does not know go where the REST
 * contract would refuse them (the body, else the query), so the answer names them as REST does.
 */
export function restParts(tool: McpTool, args: Json): RestParts {
  const op = tool.operation;
  const params: Record<string, string> = {};
  for (const name of tool.pathArgs) {
    const value = args[name];
    if (typeof value !== "string" || value === "") throw new ArgumentError(`/${name}`, "is required (a string)");
    params[name] = value;
  }
  const known = new Set([...tool.pathArgs, ...tool.queryArgs, ...tool.bodyArgs, IDEMPOTENCY_KEY_ARG, IF_MATCH_ARG]);
  const unknown = Object.keys(args).filter((k) => !known.has(k));
  const headers: Record<string, string> = {};
  const key = args[IDEMPOTENCY_KEY_ARG];
  if (key !== undefined && op.idempotent) {
    if (typeof key !== "string") throw new ArgumentError(`/${IDEMPOTENCY_KEY_ARG}`, "must be a string");
    headers["idempotency-key"] = key;
  }
  const version = args[IF_MATCH_ARG];
  if (version !== undefined && op.preconditions === "if-match") {
    if (typeof version !== "number" || !Number.isInteger(version) || version < 1)
      throw new ArgumentError(`/${IF_MATCH_ARG}`, "must be a version number (1 or more)");
    headers["if-match"] = `"${version}"`;
  }
  const query: Record<string, string> = {};
  const queryNames = op.body === undefined ? [...tool.queryArgs, ...unknown] : tool.queryArgs;
  for (const name of queryNames) if (args[name] !== undefined) query[name] = scalarText(args[name]);
  if (op.body === undefined) return { params, query, body: undefined, headers };
  // In the contract's order, whatever order the client sent: a retry with the same
  // idempotency_key must be byte for byte the same body for the REST API to replay it.
  const body: Json = {};
  for (const name of [...tool.bodyArgs, ...unknown]) if (args[name] !== undefined) body[name] = args[name];
  return { params, query, body, headers };
}

/** The tool call as an HTTP request to inject, under the MCP request's credential. */
export function restRequest(tool: McpTool, parts: RestParts, caller: Caller): InjectOptions {
  const op = tool.operation;
  let url = op.url;
  for (const [name, value] of Object.entries(parts.params)) url = url.replace(`:${name}`, encodeURIComponent(value));
  const headers: Record<string, string> = { authorization: caller.authorization, accept: "application/json", ...caller.inner, ...parts.headers };
  if (caller.userAgent !== undefined) headers["user-agent"] = caller.userAgent;
  const request: InjectOptions = { method: op.method, url, query: parts.query, headers, remoteAddress: caller.ip };
  if (parts.body !== undefined) {
    headers["content-type"] = "application/json";
    request.payload = JSON.stringify(parts.body);
  }
  return request;
}

const scalarText = (v: unknown): string => (typeof v === "string" ? v : typeof v === "object" && v !== null ? JSON.stringify(v) : String(v));

function label(item: unknown): string {
  if (!isRecord(item)) return String(item);
  const name = item["title"] ?? item["name"] ?? item["email"] ?? item["type"];
  const status = typeof item["status"] === "string" ? ` (${item["status"]})` : "";
  return `${String(item["id"] ?? item["user_id"] ?? "")}${typeof name === "string" ? ` "${name.slice(0, 80)}"` : ""}${status}`;
}

/** A line or two for clients that show text only; the whole answer is the structured content. */
function summary(tool: McpTool, answer: Json): string {
  const data = answer["data"];
  if (Array.isArray(data)) {
    const shown = data.slice(0, 5).map(label);
    const more = data.length > shown.length ? `, and ${data.length - shown.length} more` : "";
    const next = answer["has_more"] === true ? ` More follow: call ${tool.name} again with after set to next_cursor.` : "";
    return `${data.length} item${data.length === 1 ? "" : "s"}${data.length > 0 ? `: ${shown.join("; ")}${more}` : ""}.${next}`;
  }
  const version = typeof answer["version"] === "number" ? `, version ${answer["version"]}` : "";
  return `${tool.title}: ${label(answer)}${version}.`;
}

/** A tool's result, and the REST body its structured content was parsed from (sent as it came, never serialized again). */
export interface ToolAnswer {
  result: CallToolResult;
  raw?: string;
}

/** The REST answer as the tool's result: the same JSON as structured content, a refusal as a tool error carrying the problem. */
export function toolResult(tool: McpTool, res: Pick<LightMyRequestResponse, "statusCode" | "body" | "headers">): ToolAnswer {
  const parsed: unknown = res.body === "" ? {} : JSON.parse(res.body);
  const answer: Json = isRecord(parsed) ? parsed : { value: parsed };
  const raw = isRecord(parsed) && res.body !== "" ? res.body : undefined;
  const result =
    res.statusCode < 400
      ? { content: [{ type: "text" as const, text: summary(tool, answer) }], structuredContent: answer }
      : problemResult(answer, res.headers["retry-after"]);
  return raw === undefined ? { result } : { result, raw };
}

/** The JSON text of a tool's result, its structured content being the REST body's own bytes. */
export function resultText(a: ToolAnswer): string {
  if (a.raw === undefined) return JSON.stringify(a.result);
  const { structuredContent: _, ...rest } = a.result;
  return `${JSON.stringify(rest).slice(0, -1)},"structuredContent":${a.raw}}`;
}

export function problemResult(problem: Json, retryAfter?: unknown): CallToolResult {
  const wait = typeof retryAfter === "string" ? ` Retry after ${retryAfter} s.` : "";
  const pointers = Array.isArray(problem["errors"]) ? problem["errors"].filter(isRecord).map((e) => ` ${String(e["pointer"])}: ${String(e["message"])}.`) : [];
  return {
    isError: true,
    content: [{ type: "text", text: `${String(problem["code"])} (${String(problem["status"])}): ${String(problem["detail"])}${pointers.join("")}${wait}` }],
    structuredContent: problem,
  };
}

export function refusedArguments(err: AppError, requestId: string, typeBase: string): ToolAnswer {
  return { result: problemResult(toProblem(err, requestId, typeBase) as unknown as Json) };
}
