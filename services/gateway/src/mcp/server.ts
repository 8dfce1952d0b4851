import { SCOPES } from "@tasksvc/contracts";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { MCP_PATH, PROTECTED_RESOURCE_PATH } from "./paths.js";
import type { McpHandler, McpOptions } from "./protocol.js";

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
 * The protocol (the MCP SDK and the tools' schemas) is loaded on the first message to the route:
 * a replica no agent calls keeps those modules out of the heap its collections mark.
 */
export function registerMcp(app: FastifyInstance, o: McpOptions): void {
  let protocol: Promise<McpHandler> | undefined;
  const loaded = (): Promise<McpHandler> => {
    protocol ??= import("./protocol.js")
      .then((m) => m.mcpProtocol(o))
      .catch((e: unknown) => {
        // A failed load is tried again by the next message rather than kept.
        protocol = undefined;
        throw e;
      });
    return protocol;
  };
  const handle = async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => (await loaded())(req, reply);

  app.register(async (scope) => {
    // The MCP authorization spec's pointer to RFC 9728, instead of the REST routes' realm.
    scope.addHook("onSend", async (req, reply) => {
      if (reply.statusCode === 401) reply.header("www-authenticate", `Bearer resource_metadata="${req.server.publicBaseUrl}${PROTECTED_RESOURCE_PATH}"`);
    });
    scope.post(MCP_PATH, { config: { credentialed: true }, onRequest: o.authenticate }, handle);
  });
  app.get(PROTECTED_RESOURCE_PATH, async (req) => protectedResource(req.server.publicBaseUrl, o.authorizationServer()));
}
