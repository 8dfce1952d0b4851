import { randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { Identity } from "@tasksvc/contracts";

const INNER_HEADER = "x-tasksvc-inner-request";

/** What an injected request carries: the headers that mark it, and the hand-back of its identity once answered. */
export interface InnerCall {
  headers: Record<string, string>;
  done(): void;
}

export interface InnerRequests {
  /**
   * The header that makes a request injected by this process run under the given request id and,
   * when given, as the identity the request it serves was authenticated with.
   */
  enter(requestId: string, identity?: Identity): InnerCall;
  /** The id an injected request carries; undefined for every request from the network. */
  requestIdOf(raw: IncomingMessage): string | undefined;
  /** The identity an injected request was handed; undefined for every request from the network. */
  identityOf(raw: IncomingMessage): Identity | undefined;
}

interface Marked {
  requestId: string;
  identity: Identity | undefined;
}

/**
 * A request id is never taken from a client, but a request this process injects for an MCP tool
 * call runs under the id of the MCP request it serves, so logs, audit events and rewinds tie the
 * two. The header is trusted only with a secret that lives in this process's memory and nowhere else.
 * The identity travels the same way: the MCP request was authenticated a moment ago, so its tool
 * calls are not authenticated again (for an access token, a signature check each).
 */
export function innerRequests(): InnerRequests {
  const secret = randomBytes(24).toString("base64url");
  const expected = Buffer.from(secret);
  const handed = new Map<number, Identity>();
  const marked = new WeakMap<IncomingMessage, Marked | null>();
  let next = 0;

  function mark(raw: IncomingMessage): Marked | undefined {
    const value = raw.headers[INNER_HEADER];
    // Every request from the network ends here, remembered nowhere.
    if (value === undefined) return undefined;
    const seen = marked.get(raw);
    if (seen !== undefined) return seen ?? undefined;
    let found: Marked | null = null;
    if (typeof value === "string") {
      // <secret>.<ticket>.<request id>: the request id may itself hold dots, the first two parts never.
      const first = value.indexOf(".");
      const second = first < 0 ? -1 : value.indexOf(".", first + 1);
      const given = Buffer.from(value.slice(0, Math.max(first, 0)));
      if (second > 0 && given.length === expected.length && timingSafeEqual(given, expected)) {
        const ticket = value.slice(first + 1, second);
        found = { requestId: value.slice(second + 1), identity: ticket === "" ? undefined : handed.get(Number(ticket)) };
      }
    }
    marked.set(raw, found);
    return found ?? undefined;
  }

  return {
    enter(requestId, identity) {
      if (identity === undefined) return { headers: { [INNER_HEADER]: `${secret}..${requestId}` }, done() {} };
      const ticket = next++;
      handed.set(ticket, identity);
      return { headers: { [INNER_HEADER]: `${secret}.${ticket}.${requestId}` }, done: () => handed.delete(ticket) };
    },
    requestIdOf: (raw) => mark(raw)?.requestId,
    identityOf: (raw) => mark(raw)?.identity,
  };
}
