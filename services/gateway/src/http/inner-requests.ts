import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

const INNER_HEADER = "x-tasksvc-inner-request";

export interface InnerRequests {
  /** The header that makes a request injected by this process run under the given request id. */
  header(requestId: string): Record<string, string>;
  /** The id an injected request carries; undefined for every request from the network. */
  requestIdOf(raw: IncomingMessage): string | undefined;
}

/**
 * A request id is never taken from a client, but a request this process injects for an MCP tool
 * call runs under the id of the MCP request it serves, so logs, audit events and rewinds tie the
 * two. The header is trusted only with a secret that lives in this process's memory and nowhere else.
 */
export function innerRequests(): InnerRequests {
  const secret = randomBytes(24).toString("base64url");
  const expected = Buffer.from(secret);
  return {
    header: (requestId) => ({ [INNER_HEADER]: `${secret}.${requestId}` }),
    requestIdOf(raw) {
      const value = raw.headers[INNER_HEADER];
      if (typeof value !== "string") return undefined;
      const dot = value.indexOf(".");
      const given = Buffer.from(value.slice(0, Math.max(dot, 0)));
      if (dot < 0 || given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return value.slice(dot + 1);
    },
  };
}
