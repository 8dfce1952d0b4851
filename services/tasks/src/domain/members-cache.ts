import type { MembersPort } from "./people.js";

export interface MembersCacheOptions {
  /** How long a replica trusts a membership it was told of, should an invalidation be lost. 0 keeps nothing. */
  ttlMs: number;
  /** What the kept ids may take, counted with a fixed cost per entry; the organization kept longest goes first. */
  maxBytes?: number;
  /** Users kept per organization; the one kept longest goes first. */
  maxUsersPerOrganization?: number;
}

/** Roughly what V8 spends on a map entry besides its key's characters. */
const ENTRY_BYTES = 64;

/**
 * The members the keys service answered as current, kept a few seconds per replica, so that a write
 * naming the same people again (assignees, a user field) does not ask again: that question was a
 * third of the CPU of such a create. Only "is a member" is kept; a refusal is always asked anew.
 * The keys service broadcasts an invalidation per organization on every membership change, the same
 * one the gateways' identity caches take, and the whole cache is dropped on any connection trouble,
 * since an invalidation may have been missed then. A removal reaches a write that raced it no later
 * than without the cache: the check was made before the write's transaction either way.
 */
export function membersCache(source: MembersPort, opts: MembersCacheOptions) {
  const maxBytes = opts.maxBytes ?? 4 * 1024 * 1024;
  const maxUsers = opts.maxUsersPerOrganization ?? 1_000;
  const orgs = new Map<string, { users: Map<string, number>; bytes: number }>();
  let bytes = 0;
  const drop = (org: string) => {
    const kept = orgs.get(org);
    if (kept === undefined) return;
    bytes -= kept.bytes;
    orgs.delete(org);
  };
  /** Bumped by every invalidation: an answer asked before it may be stale and is not kept. */
  let generation = 0;

  const keep = (org: string, users: Iterable<string>, until: number) => {
    let kept = orgs.get(org);
    if (kept === undefined) {
      kept = { users: new Map(), bytes: org.length + ENTRY_BYTES };
      orgs.set(org, kept);
      bytes += kept.bytes;
    }
    for (const u of users) {
      if (!kept.users.has(u)) {
        if (kept.users.size >= maxUsers) {
          const oldest = kept.users.keys().next();
          if (!oldest.done) {
            kept.users.delete(oldest.value);
            kept.bytes -= oldest.value.length + ENTRY_BYTES;
            bytes -= oldest.value.length + ENTRY_BYTES;
          }
        }
        kept.bytes += u.length + ENTRY_BYTES;
        bytes += u.length + ENTRY_BYTES;
      }
      kept.users.set(u, until);
    }
    // Whole organizations go, the one kept longest first, never the one just kept.
    for (const oldest of orgs.keys()) {
      if (bytes <= maxBytes || oldest === org) break;
      drop(oldest);
    }
  };

  const port: MembersPort = {
    async current(ctx, org, userIds) {
      const now = Date.now();
      const kept = orgs.get(org)?.users;
      const known = new Set<string>();
      const ask: string[] = [];
      for (const u of userIds) {
        const until = kept?.get(u);
        if (until !== undefined && until > now) known.add(u);
        else ask.push(u);
      }
      if (ask.length === 0) return known;
      const startedAt = generation;
      const answered = await source.current(ctx, org, ask);
      if (opts.ttlMs > 0 && startedAt === generation && answered.size > 0) keep(org, answered, Date.now() + opts.ttlMs);
      for (const u of answered) known.add(u);
      return known;
    },
  };

  return {
    port,
    /** A membership of the organization changed somewhere. */
    invalidate(org: string): void {
      generation++;
      drop(org);
    },
    clear(): void {
      generation++;
      orgs.clear();
      bytes = 0;
    },
  };
}
