import { randomUUID } from "node:crypto";
import { maxHeaderSize } from "node:http";
import { isIP } from "node:net";
import type { FastifyRequest } from "fastify";

/** Never taken from the client (decision 0002). */
export const newRequestId = (): string => `req_${randomUUID().replace(/-/g, "")}`;

/** As long as the request line can be, so the contract answers a too-long id (400 naming it), never the router (a bodiless 414). */
export const MAX_PARAM_LENGTH = maxHeaderSize;

/**
 * `nosniff`: a browser never guesses another type (a JSON body is never run as a script).
 * `no-store`: an answer carries one organization's data, or says whether a credential works, and
 * no cache may keep it; the few public, fixed files set their own Cache-Control over this one.
 */
export const EVERY_ANSWER_HEADERS: Readonly<Record<string, string>> = { "x-content-type-options": "nosniff", "cache-control": "no-store" };

/**
 * Node's default check interval of 30 s would let a request outlive a short BODY_TIMEOUT by that
 * much. The headers' own limit must not exceed it: Node swaps the two limits when it does.
 */
export function bodyTimeoutOptions(bodyTimeoutMs: number | undefined): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  if (bodyTimeoutMs === undefined) return { requestTimeout: 0, headersTimeout: NODE_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 30_000 };
  return {
    requestTimeout: bodyTimeoutMs,
    headersTimeout: Math.min(NODE_HEADERS_TIMEOUT_MS, bodyTimeoutMs),
    connectionsCheckingInterval: Math.min(1000, bodyTimeoutMs),
  };
}

const NODE_HEADERS_TIMEOUT_MS = 60_000;

/** Node keeps only the first of some fields, Authorization among them. */
export function fieldCount(rawHeaders: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === name) n++;
  return n;
}

/** No resource has an empty id, so such a path names no route. A catch-all's `*` (the CORS preflight's) may be empty. */
export function emptyPathParameter(req: Pick<FastifyRequest, "params">): string | undefined {
  const params = req.params;
  if (typeof params !== "object" || params === null) return undefined;
  for (const [name, value] of Object.entries(params)) if (value === "" && name !== "*") return name;
  return undefined;
}

const LINK_PATH = /^(.*?\/(?:uploads|downloads))\/./s;

/**
 * A link's path carries its capability, the link's whole authorization: whoever reads the log line
 * could use the link while it lives. Such a request is logged by its route pattern, whatever route
 * it matched (a mangled link too); every other as sent, since its ids are what an operator looks for.
 */
export function loggedUrl(req: FastifyRequest): string {
  const route = req.routeOptions.url;
  if (route?.includes("/:capability")) return route;
  let path = req.url;
  try {
    path = decodeURIComponent(path);
  } catch {
    // A path that does not decode (the router's 400) is matched as sent.
  }
  const link = LINK_PATH.exec(path.toLowerCase().replace(/\/{2,}/g, "/"));
  return link ? `${link[1]}/:capability` : req.url;
}

/**
 * Where a request came from, as the RPC context carries it to the audit log. Behind a trusted proxy
 * `req.ip` is the client's X-Forwarded-For entry as sent, so anything but an address is left out
 * rather than passed on (the context's bounds would refuse it, failing the request).
 */
export function clientOrigin(req: Pick<FastifyRequest, "ip" | "headers">): { ip?: string; user_agent?: string } {
  const userAgent = req.headers["user-agent"]?.slice(0, 512);
  return { ...(isIP(req.ip) === 0 ? {} : { ip: req.ip }), ...(userAgent === undefined ? {} : { user_agent: userAgent }) };
}
