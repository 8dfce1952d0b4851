import { createHash } from "node:crypto";
import type { AuditEvent } from "@tasksvc/contracts";
import { type Api, eventually } from "@tasksvc/testing";
import canonicalize from "canonicalize";
import { expect } from "vitest";

export const GENESIS = "0".repeat(64);

/** Every page of GET /v1/audit-events, newest first, as a client reads them. */
export async function allAuditEvents(gw: Api, token: string, query = ""): Promise<AuditEvent[]> {
  const out: AuditEvent[] = [];
  let after: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const sep = query === "" ? "" : "&";
    const url: string = `/v1/audit-events?limit=100${sep}${query}${after === null ? "" : `&after=${encodeURIComponent(after)}`}`;
    const r = await gw.get(url, { token });
    expect(r.status, r.text).toBe(200);
    out.push(...(r.body.data as AuditEvent[]));
    if (!r.body.has_more) return out;
    after = r.body.next_cursor as string;
  }
  throw new Error("more than 1000 pages");
}

/** The check a client runs offline: the sequence of the first event (oldest first) that does not verify, or null. */
export function firstBroken(oldestFirst: readonly AuditEvent[]): number | null {
  let prev = oldestFirst[0]?.prev_hash ?? GENESIS;
  let sequence = (oldestFirst[0]?.sequence ?? 1) - 1;
  for (const e of oldestFirst) {
    const { hash, ...rest } = e;
    const expected = createHash("sha256")
      .update(prev + (canonicalize(rest) ?? ""), "utf8")
      .digest("hex");
    if (e.prev_hash !== prev || e.sequence !== sequence + 1 || hash !== expected) return e.sequence;
    prev = hash;
    sequence = e.sequence;
  }
  return null;
}

/** Polls until the organization's log holds `n` events matching `query` (and then checks that there are no more). */
export async function awaitAuditEvents(gw: Api, token: string, query: string, n: number, timeoutMs = 15_000): Promise<AuditEvent[]> {
  return eventually(
    async () => {
      const events = await allAuditEvents(gw, token, query);
      expect(events.length, JSON.stringify(events)).toBeGreaterThanOrEqual(n);
      return events;
    },
    { timeoutMs },
  );
}
