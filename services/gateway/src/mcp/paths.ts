// Read by the OpenAPI document too, which must load no serving code.

export const MCP_PATH = "/mcp";
export const PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource";
/** JSON-RPC messages in one POST: an agent sends one at a time, so a batch is bounded well below the REST batch's items. */
export const MCP_MAX_MESSAGES = 10;
