import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

/** An MCP session with the SDK's own client, acting as the given credential, as an agent's host would open it. */
export async function mcpSession(baseUrl: string, token: string) {
  const client = new Client({ name: "tasksvc-e2e", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", baseUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  return {
    client,
    /** A tool's result; a protocol error (not a tool error) throws. */
    async call(name: string, args: Record<string, unknown> = {}): Promise<CallToolResult & { structuredContent: Record<string, unknown> }> {
      const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
      if (r.structuredContent === undefined) throw new Error(`${name} answered no structured content: ${JSON.stringify(r)}`);
      return r as CallToolResult & { structuredContent: Record<string, unknown> };
    },
    close: () => client.close(),
  };
}

export type McpSession = Awaited<ReturnType<typeof mcpSession>>;

/** What a test prints beside a failed expectation. */
export const shown = (r: unknown) => JSON.stringify(r).slice(0, 2000);
