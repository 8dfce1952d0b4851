import type { Actor } from "@tasksvc/contracts";

/**
 * What each version records of the write that made it: the credential (`actor`, null only for a
 * write whose credential was never recorded), and for an undo to find it, the request and a batch
 * item's batch key (the batch's Idempotency-Key). The service's own writes have neither.
 */
export interface VersionStamp {
  actor: Actor | null;
  requestId: string | null;
  batchKey: string | null;
}

/** The columns a stamp fills, as the version statements bind them. */
export function stampColumns(s: VersionStamp) {
  return {
    actor_type: s.actor?.type ?? null,
    actor_id: s.actor?.id ?? null,
    actor_user_id: s.actor?.user_id ?? null,
    request_id: s.requestId,
    batch_key: s.batchKey,
  };
}

export interface ActorColumns {
  actor_type: Actor["type"] | null;
  actor_id: string | null;
  actor_user_id: string | null;
}

/** A version's `actor`, as TypeScript shows it; the twin of actorJsonSql. */
export const actorOfRow = (r: ActorColumns): Actor | null =>
  r.actor_type === null || r.actor_id === null ? null : { type: r.actor_type, id: r.actor_id, user_id: r.actor_user_id };

/** A version's `actor` as compact JSON built by Postgres (columns prefixed `v`), in the contract's key order. */
export const actorJsonSql = (v: string): string =>
  `(case when ${v}actor_type is null then null else (select row_to_json(a) from (select ${v}actor_type as type, ${v}actor_id as id, ${v}actor_user_id as user_id) a) end)`;
