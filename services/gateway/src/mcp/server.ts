import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  type ListToolsResult,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv-provider.js";
import { SCOPES } from "@tasksvc/contracts";
import { AppError, isAppError } from "@tasksvc/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { InnerRequests } from "../http/inner-requests.js";
import type { Operation } from "../pipeline/operation.js";
import { type Caller, refusedArguments, restRequest, toolResult } from "./calls.js";
import { MCP_MAX_MESSAGES, MCP_PATH, PROTECTED_RESOURCE_PATH } from "./paths.js";
import { buildTools } from "./tools.js";

export interface McpOptions {
  operations: readonly Operation[];
  authenticate: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  inner: InnerRequests;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Authenticated by its own route hook, so not an anonymous route (which is limited per client address instead). */
    credentialed?: boolean;
  }
}

/** RFC 9728: where an MCP client that got a 401 finds how to get a token. */
export function protectedResource(base: string) {
  return {
    resource: `${base}${MCP_PATH}`,
    authorization_servers: [base],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: "Task Service MCP server",
    resource_documentation: `${base}/docs`,
  };
}

/**
 * The transport's own refusals (a missing Accept, a message that is no JSON-RPC, an unsupported
 * protocol version) as problems like every other 4xx of this API; the MCP spec leaves the body of
 * such an answer free.
 */
function transportRefusal(status: number, body: string): AppError {
  let message = "The request is not a valid MCP message.";
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === "string") message = parsed.error.message;
  } catch {
    // Not JSON: the generic message stands.
  }
  if (status === 415) return new AppError("unsupported_media_type", message);
  return new AppError("malformed_request", `The MCP request was refused: ${message}`);
}

/**
 * Stateless Streamable HTTP (decision 0046): every POST gets its own protocol object and
 * transport, and nothing of a session lives in a replica, so any replica answers any message.
 * Each tool call is the REST request it mirrors, injected through the whole pipeline with the
 * caller's credential: scopes, plans, limits, charging and idempotency are REST's by construction.
 */
export function registerMcp(app: FastifyInstance, o: McpOptions): void {
  const tools = buildTools(o.operations);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed: ListToolsResult = {
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  };
  // The SDK builds an Ajv per server otherwise: compiled once here, not per request.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const serverInfo = { name: "tasksvc", title: "Task Service", version: "1.0.0" };
  const instructions =
    "Tools over this organization's tasks, acting as the credential you connected with: each tool call is one REST API call, with its scopes, limits and cost. A refused call is a tool error whose structured content is the API's problem (code, detail, errors).";

  async function callTool(req: FastifyRequest, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const tool = byName.get(name);
    // A protocol error, not a tool error: the client asked for something the server never listed.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const caller: Caller = {
      authorization: req.headers.authorization ?? "",
      ip: req.ip,
      userAgent: req.headers["user-agent"],
      inner: o.inner.header(String(req.id)),
    };
    try {
      const res = await req.server.inject(restRequest(tool, args, caller));
      return toolResult(tool, res);
    } catch (e) {
      if (isAppError(e)) return refusedArguments(e, String(req.id), req.server.publicBaseUrl);
      throw e;
    }
  }

  function serverFor(req: FastifyRequest): Server {
    const server = new Server(serverInfo, { capabilities: { tools: { listChanged: false } }, instructions, jsonSchemaValidator });
    server.setRequestHandler(ListToolsRequestSchema, () => listed);
    server.setRequestHandler(CallToolRequestSchema, (call) => callTool(req, call.params.name, call.params.arguments ?? {}));
    return server;
  }

  async function handle(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    if (Array.isArray(req.body) && req.body.length > MCP_MAX_MESSAGES) {
      throw new AppError("validation_failed", `A POST carries at most ${MCP_MAX_MESSAGES} JSON-RPC messages.`, {
        errors: [{ pointer: "/", message: `holds ${req.body.length} messages; at most ${MCP_MAX_MESSAGES}` }],
      });
    }
    const server = serverFor(req);
    // JSON answers, not SSE: a stateless server never speaks first, so one answer per POST is all there is.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    try {
      await server.connect(transport);
      const headers: Record<string, string> = {};
      for (const name of ["accept", "content-type", "mcp-protocol-version"]) {
        const v = req.headers[name];
        if (typeof v === "string") headers[name] = v;
      }
      const answer = await transport.handleRequest(new Request(`http://gateway${MCP_PATH}`, { method: "POST", headers }), { parsedBody: req.body });
      if (answer.status >= 400) throw transportRefusal(answer.status, await answer.text());
      reply.code(answer.status);
      const type = answer.headers.get("content-type");
      if (type !== null) reply.type(type);
      return reply.send(answer.status === 202 ? undefined : await answer.text());
    } finally {
      await server.close();
    }
  }

  app.register(async (scope) => {
    // The MCP authorization spec's pointer to RFC 9728, instead of the REST routes' realm.
    scope.addHook("onSend", async (req, reply) => {
      if (reply.statusCode === 401) reply.header("www-authenticate", `Bearer resource_metadata="${req.server.publicBaseUrl}${PROTECTED_RESOURCE_PATH}"`);
    });
    scope.post(MCP_PATH, { config: { credentialed: true }, onRequest: o.authenticate }, handle);
  });
  app.get(PROTECTED_RESOURCE_PATH, async (req) => protectedResource(req.server.publicBaseUrl));
}
