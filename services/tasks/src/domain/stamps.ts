import { type Caller, SYSTEM_ACTOR } from "@tasksvc/contracts";
import type { VersionStamp } from "../repo/version-stamp.js";

/** A write's caller; a batch's items also carry the batch's Idempotency-Key, which their versions record. */
export type WriteCaller = Caller & { batchKey?: string | undefined };

/** What the versions a caller's write makes record of it. */
export const stampOf = (c: WriteCaller): VersionStamp => ({ actor: c.actor, requestId: c.ctx.request_id, batchKey: c.batchKey ?? null });

/** The service's own work (occurrences of a series, removals of a deleted label or field): no request, no credential. */
export const SERVICE_STAMP: VersionStamp = { actor: SYSTEM_ACTOR, requestId: null, batchKey: null };
