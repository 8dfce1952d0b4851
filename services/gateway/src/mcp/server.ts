import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  type ListToolsResult,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import { SCOPES } from "@tasksvc/contracts";
import { isAppError } from "@tasksvc/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { InnerRequests } from "../http/inner-requests.js";
import type { Operation } from "../pipeline/operation.js";
import { type Caller, refusedArguments, restRequest, toolResult } from "./calls.js";
import { MCP_PATH, PROTECTED_RESOURCE_PATH } from "./paths.js";
import { buildTools } from "./tools.js";
import { StatelessTransport } from "./transport.js";

export interface McpOptions {
  operations: readonly Operation[];
  authenticate: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  inner: InnerRequests;
  /** Our OAuth authorization server's issuer, which RFC 9728 names (by default the public base URL). */
  authorizationServer: () => string;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Authenticated by its own route hook, so not an anonymous route (which is limited per client address instead). */
    credentialed?: boolean;
  }
}

/** RFC 9728: where an MCP client that got a 401 finds how to get a token. */
export function protectedResource(base: string, authorizationServer: string) {
  return {
    resource: `${base}${MCP_PATH}`,
    authorization_servers: [authorizationServer],
    scopes_supported: [...SCOPES],
    bearer_methods_supported: ["header"],
    resource_name: "Task Service MCP server",
    resource_documentation: `${base}/docs`,
  };
}

/**
 * Stateless Streamable HTTP (decision 0046): nothing of a session lives in a replica, so any
 * replica answers any message; the SDK's protocol object answers initialize, ping and the tools.
 * Each tool call is the REST request it mirrors, injected through the whole pipeline with the
 * caller's credential: scopes, plans, limits, charging and idempotency are REST's by construction.
 */
export function registerMcp(app: FastifyInstance, o: McpOptions): void {
  const tools = buildTools(o.operations);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const listed: ListToolsResult = {
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  };
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

  // One protocol object for the process: the transport keeps each POST's requests apart.
  const server = new Server(serverInfo, { capabilities: { tools: { listChanged: false } }, instructions });
  const transport = new StatelessTransport();
  server.setRequestHandler(ListToolsRequestSchema, () => listed);
  server.setRequestHandler(CallToolRequestSchema, (call, extra) => {
    const req = transport.contextOf(extra.requestId) as FastifyRequest | undefined;
    if (!req) throw new McpError(ErrorCode.InternalError, "The request's HTTP context is gone.");
    return callTool(req, call.params.name, call.params.arguments ?? {});
  });
  void server.connect(transport);

  async function handle(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const protocolVersion = req.headers["mcp-protocol-version"];
    const answer = await transport.handle(
      req.body,
      { accept: req.headers.accept, protocolVersion: typeof protocolVersion === "string" ? protocolVersion : undefined },
      req,
    );
    if (answer.status === 202) return reply.code(202).send();
    return reply.code(200).type("application/json; charset=utf-8").send(answer.body);
  }

  app.register(async (scope) => {
    // The MCP authorization spec's pointer to RFC 9728, instead of the REST routes' realm.
    scope.addHook("onSend", async (req, reply) => {
      if (reply.statusCode === 401) reply.header("www-authenticate", `Bearer resource_metadata="${req.server.publicBaseUrl}${PROTECTED_RESOURCE_PATH}"`);
    });
    scope.post(MCP_PATH, { config: { credentialed: true }, onRequest: o.authenticate }, handle);
  });
  app.get(PROTECTED_RESOURCE_PATH, async (req) => protectedResource(req.server.publicBaseUrl, o.authorizationServer()));
}
