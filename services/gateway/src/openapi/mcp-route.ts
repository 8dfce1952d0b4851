import type { ErrorCode } from "@tasksvc/contracts";
import { MCP_MAX_MESSAGES, MCP_PATH, PROTECTED_RESOURCE_PATH } from "../mcp/paths.js";
import type { Json } from "./schemas.js";

// The MCP endpoint and its RFC 9728 document are no operations of the table (a tool call is one,
// run through the operation it names), so they are documented here beside the other plain routes.

interface Helpers {
  problem(codes: ErrorCode[], extraHeaders?: Json): Json;
  header(description: string, schema?: Json): Json;
  requestId: Json;
  methodNotAllowed: Json;
}

export const MCP_TAG = {
  name: "MCP",
  description:
    "The Model Context Protocol server for AI agents: tools over tasks, comments, projects, labels, members, boards and notifications, each the REST operation it names, with the same credentials, scopes, limits and cost.",
} as const;

const text = (description: string, example: unknown, schema: Json = { type: "string" }) => ({ ...schema, description, examples: [example] });

export const MCP_SCHEMAS: Record<string, Json> = {
  JsonRpcMessage: {
    type: "object",
    description: "A JSON-RPC 2.0 request, notification or response of the Model Context Protocol.",
    properties: {
      jsonrpc: text("Always `2.0`.", "2.0", { type: "string", const: "2.0" }),
      id: text("The request's id, echoed in its response; absent on a notification.", 1, { type: ["string", "integer"] }),
      method: text("The MCP method: `initialize`, `tools/list`, `tools/call`, `ping`, or a notification.", "tools/call"),
      params: { type: "object", description: "The method's parameters.", examples: [{ name: "get_task", arguments: { task_id: "T-42" } }] },
      result: { type: "object", description: "A response's result.", examples: [{}] },
      error: {
        type: "object",
        description: "A response's JSON-RPC error (a refused tool call is a result with `isError: true` instead).",
        examples: [{ code: -32602, message: "Unknown tool: x" }],
      },
    },
    required: ["jsonrpc"],
    examples: [{ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_task", arguments: { task_id: "T-42" } } }],
  },
  ProtectedResourceMetadata: {
    type: "object",
    description: "OAuth 2.0 Protected Resource Metadata (RFC 9728) of the MCP endpoint.",
    properties: {
      resource: text("The MCP endpoint's URL, the resource a token is for.", "https://tasks.example.com/mcp", { type: "string", format: "uri" }),
      authorization_servers: {
        type: "array",
        items: { type: "string", format: "uri" },
        description: "The issuers whose access tokens the endpoint accepts: this service's own authorization server.",
        examples: [["https://tasks.example.com"]],
      },
      scopes_supported: {
        type: "array",
        items: { type: "string" },
        description: "Every scope a credential may hold.",
        examples: [["tasks:read", "tasks:write"]],
      },
      bearer_methods_supported: {
        type: "array",
        items: { type: "string", const: "header" },
        description: "How to send the token: the Authorization header only.",
        examples: [["header"]],
      },
      resource_name: text("A name to show.", "Task Service MCP server"),
      resource_documentation: text("Where people read about the API.", "https://tasks.example.com/docs", { type: "string", format: "uri" }),
    },
    required: ["resource", "authorization_servers", "scopes_supported", "bearer_methods_supported"],
    additionalProperties: false,
  },
};

export function mcpRoutePaths(h: Helpers): Record<string, Record<string, Json>> {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const retryAfter = { "Retry-After": h.header("Seconds to wait", { type: "integer" }) };
  const message = { oneOf: [ref("JsonRpcMessage"), { type: "array", minItems: 1, maxItems: MCP_MAX_MESSAGES, items: ref("JsonRpcMessage") }] };
  return {
    [MCP_PATH]: {
      post: {
        operationId: "postMcpMessage",
        tags: [MCP_TAG.name],
        summary: "Send MCP messages (Streamable HTTP, stateless)",
        description: `The Model Context Protocol's Streamable HTTP transport, stateless: every POST carries JSON-RPC messages (at most ${MCP_MAX_MESSAGES}) and gets their answers as one JSON document; no session id, no server-sent stream (GET and DELETE answer 405). Send \`Accept: application/json, text/event-stream\`. \`initialize\`, \`tools/list\` and \`ping\` cost nothing; each \`tools/call\` runs the REST operation its tool names, with this request's credential: its scope, plan entitlement and cost (1 API call; a repeated \`idempotency_key\` costs nothing), and a refusal is a tool result with \`isError: true\` whose structured content is the problem.`,
        security: [{ bearer: [] }],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: message,
              example: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_task", arguments: { task_id: "T-1" } } },
            },
          },
        },
        responses: {
          "200": {
            description: "The answers to the requests among the messages",
            headers: { "x-request-id": h.requestId },
            content: { "application/json": { schema: message } },
          },
          "202": { description: "Only notifications or responses were sent: accepted, nothing to answer", headers: { "x-request-id": h.requestId } },
          "400": h.problem(["validation_failed", "malformed_request"]),
          "401": h.problem(["missing_credentials", "invalid_api_key", "invalid_token"], {
            "WWW-Authenticate": h.header('`Bearer resource_metadata="<base URL>/.well-known/oauth-protected-resource"`: where to find how to get a token'),
          }),
          "405": h.methodNotAllowed,
          "413": h.problem(["payload_too_large"]),
          "415": h.problem(["unsupported_media_type"]),
          "429": h.problem(["rate_limited"], retryAfter),
          "500": h.problem(["internal_error"]),
          "503": h.problem(["service_unavailable"], retryAfter),
        },
      },
    },
    [PROTECTED_RESOURCE_PATH]: {
      get: {
        operationId: "getProtectedResourceMetadata",
        tags: [MCP_TAG.name],
        summary: "The MCP endpoint's protected resource metadata (RFC 9728)",
        description: "No credential. Names the MCP endpoint as the resource and this service's own authorization server as the one that issues tokens for it.",
        security: [],
        responses: {
          "200": {
            description: "The metadata",
            headers: { "x-request-id": h.requestId },
            content: { "application/json": { schema: ref("ProtectedResourceMetadata") } },
          },
          "405": h.methodNotAllowed,
          "429": h.problem(["rate_limited"], retryAfter),
        },
      },
    },
  };
}
