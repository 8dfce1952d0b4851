import { randomUUID } from "node:crypto";
import { maxHeaderSize } from "node:http";
import type { FastifyRequest } from "fastify";

// What every request and answer gets at the HTTP level, whichever route serves it: its id, the
// headers every answer carries, Node's limits as the gateway sets them, and how a log names it.

/** Request ids as the gateway mints them (decision 0002): never taken from the client. */
export const newRequestId = (): string => `req_${randomUUID().replace(/-/g, "")}`;

/**
 * Longest path parameter the router matches: as long as the request line can be, so that the
 * contract answers a too-long id (400 naming the parameter, after authentication) and never the
 * router (fastify's default of 100 answered 414 with no problem body).
 */
export const MAX_PARAM_LENGTH = maxHeaderSize;

/**
 * Headers on every answer, errors included. `nosniff`: a browser takes the type sent and never
 * guesses another (a JSON body is never run as a script or rendered as a page). `no-store`: an
 * answer carries one organization's data, or says whether a credential works, and no shared
 * cache (proxy, CDN) or browser cache may keep it; the few routes whose content is public and
 * fixed (the documentation's files) set their own Cache-Control over this one.
 */
export const EVERY_ANSWER_HEADERS: Readonly<Record<string, string>> = { "x-content-type-options": "nosniff", "cache-control": "no-store" };

/**
 * Fastify's settings for BODY_TIMEOUT: Node's own request timeout (the whole request, headers
 * and body, must arrive within it; Node then reports ERR_HTTP_REQUEST_TIMEOUT, answered 408 by
 * the edge's clientErrorHandler), and how often Node looks for expired requests: its default of 30 s
 * would let a request outlive a short BODY_TIMEOUT by that much. The headers' own limit (Node's
 * 60 s) must not exceed it: Node swaps the two limits when it does.
 */
export function bodyTimeoutOptions(bodyTimeoutMs: number | undefined): { requestTimeout: number; headersTimeout: number; connectionsCheckingInterval: number } {
  if (bodyTimeoutMs === undefined) return { requestTimeout: 0, headersTimeout: NODE_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 30_000 };
  return {
    requestTimeout: bodyTimeoutMs,
    headersTimeout: Math.min(NODE_HEADERS_TIMEOUT_MS, bodyTimeoutMs),
    connectionsCheckingInterval: Math.min(1000, bodyTimeoutMs),
  };
}

/** Node's default limit for a request's headers to arrive. */
const NODE_HEADERS_TIMEOUT_MS = 60_000;

/** How many times a header field occurs in a request (Node keeps only the first of some, Authorization among them). */
export function fieldCount(rawHeaders: readonly string[], name: string): number {
  let n = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === name) n++;
  return n;
}

/**
 * The path parameter a request's route matched as empty text, if any (`GET /v1/tasks/` matches
 * `/v1/tasks/:task_id` with an empty task_id). No resource has an empty id, so such a path names
 * no route. A catch-all's `*` (the CORS preflight's) may be empty: it names no resource.
 */
export function emptyPathParameter(req: Pick<FastifyRequest, "params">): string | undefined {
  const params = req.params;
  if (typeof params !== "object" || params === null) return undefined;
  for (const [name, value] of Object.entries(params)) if (value === "" && name !== "*") return name;
  return undefined;
}

/** An upload or download link's path, read leniently (decoded, any case, repeated slashes). */
const LINK_PATH = /^(.*?\/(?:uploads|downloads))\/./s;

/**
 * The URL a log line names for a request. A link's path carries its capability, the link's whole
 * authorization: whoever reads the line could use the link while it lives. Such a request is
 * logged by its route pattern, `…/uploads/:capability` or `…/downloads/:capability`, whether it
 * matched that route, another one (the CORS preflight's catch-all) or none (a link its client
 * mangled: a 404 or 405); every other request as sent, since its ids are what an operator
 * looks for.
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
