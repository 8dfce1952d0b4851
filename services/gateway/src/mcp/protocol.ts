import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, type ListToolsResult, McpError } from "@modelcontextprotocol/sdk/types.js";
import { isAppError } from "@tasksvc/errors";
import type { FastifyReply, FastifyRequest } from "fastify";
import { clientOrigin } from "../http/requests.js";
import type { InnerRequests } from "../http/inner-requests.js";
import { type DirectRunner, runsDirectly } from "../pipeline/direct.js";
import type { ServedOperation } from "../pipeline/operation.js";
import { type Caller, type RestParts, refusedArguments, restParts, restRequest, resultText, type ToolAnswer, toolResult } from "./calls.js";
import { buildTools } from "./tools.js";
import { StatelessTransport } from "./transport.js";

export interface McpOptions {
  operations: readonly ServedOperation[];
  /** Runs a read's pipeline steps in this process, for the tools that change nothing. */
  direct: DirectRunner;
  authenticate: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  inner: InnerRequests;
  /** Our OAuth authorization server's issuer, which RFC 9728 names (by default the public base URL). */
  authorizationServer: () => string;
}

export type McpHandler = (req: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * Stateless Streamable HTTP (decision 0046): nothing of a session lives in a replica, so any
 * replica answers any message; the SDK's protocol object answers initialize, ping and the tools.
 * Each tool call is the REST request it mirrors, injected through the whole pipeline with the
 * caller's credential: scopes, plans, limits, charging and idempotency are REST's by construction.
 */
export function mcpProtocol(o: McpOptions): McpHandler {
  const tools = buildTools(o.operations);
  const byName = new Map(tools.map((t) => [t.name, t]));
  // Tools that change nothing run their operation's steps in this process; the others are injected
  // as HTTP requests, for the Idempotency-Key record and preconditions that live in the route's hooks.
  const directly = new Map(
    tools.flatMap((t) => {
      const op = o.operations.find((x) => x.operationId === t.operation.operationId);
      return op !== undefined && runsDirectly(op, t.annotations.readOnlyHint) ? [[t.name, op] as const] : [];
    }),
  );
  const listed: ListToolsResult = {
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  };
  const serverInfo = { name: "tasksvc", title: "Task Service", version: "1.0.0" };
  const instructions =
    "Tools over this organization's tasks, acting as the credential you connected with: each tool call is one REST API call, with its scopes, limits and cost. A refused call is a tool error whose structured content is the API's problem (code, detail, errors).";

  async function callTool(req: FastifyRequest, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
    const tool = byName.get(name);
    // A protocol error, not a tool error: the client asked for something the server never listed.
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const requestId = String(req.id);
    let parts: RestParts;
    try {
      parts = restParts(tool, args);
    } catch (e) {
      if (isAppError(e)) return refusedArguments(e, requestId, req.server.publicBaseUrl);
      throw e;
    }
    const direct = directly.get(name);
    const identity = req.pipeline?.identity;
    if (direct !== undefined && identity !== undefined) {
      const call = { identity, requestId, origin: clientOrigin(req), publicBaseUrl: req.server.publicBaseUrl, log: req.log };
      const answer = await o.direct(direct, { ...call, raw: { params: parts.params, query: parts.query, body: parts.body } });
      // The access line an injected request would have written, so each tool call is on the record.
      req.log.info({ tool: name, status: answer.statusCode }, "tool call");
      return toolResult(tool, answer);
    }
    const inner = o.inner.enter(requestId, identity);
    const caller: Caller = { authorization: req.headers.authorization ?? "", ip: req.ip, userAgent: req.headers["user-agent"], inner: inner.headers };
    try {
      return toolResult(tool, await req.server.inject(restRequest(tool, parts, caller)));
    } finally {
      inner.done();
    }
  }

  // One protocol object for the process: the transport keeps each POST's requests apart, and
  // answers plain tool calls itself, without the protocol object's parse of each call and result.
  const server = new Server(serverInfo, { capabilities: { tools: { listChanged: false } }, instructions });
  const transport = new StatelessTransport(async (name, args, context) => resultText(await callTool(context as FastifyRequest, name, args)));
  server.setRequestHandler(ListToolsRequestSchema, () => listed);
  server.setRequestHandler(CallToolRequestSchema, async (call, extra) => {
    const req = transport.contextOf(extra.requestId) as FastifyRequest | undefined;
    if (!req) throw new McpError(ErrorCode.InternalError, "The request's HTTP context is gone.");
    return (await callTool(req, call.params.name, call.params.arguments ?? {})).result;
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

  return handle;
}
