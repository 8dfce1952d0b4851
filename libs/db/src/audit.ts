import { type Actor, type AuditAction, type AuditChanges, AuditMessage, type AuditTarget, auditSubject, type RpcContext } from "@tasksvc/contracts";
import type { Logger } from "@tasksvc/logger";
import { newId } from "@tasksvc/secrets";
import { type OutboxPublisher, type OutboxRelay, type OutboxRow, startOutboxRelay } from "./outbox.js";
import type { Database, Sql } from "./pool.js";
import { type Fragment, jsonb } from "./values.js";

/** One change to record; `ctx` gives the request's id, address and User-Agent (absent for the service's own work). */
export interface AuditEntry {
  organizationId: string;
  action: AuditAction;
  actor: Actor;
  target: AuditTarget;
  changes?: AuditChanges;
  ctx?: Pick<RpcContext, "request_id" | "ip" | "user_agent"> | undefined;
}

/** The fields whose values differ, as `{ field: { from, to } }`; values compared as JSON. */
export function changesOf<T extends Record<string, unknown>>(before: T, after: T, fields: readonly (keyof T & string)[]): AuditChanges {
  const out: AuditChanges = {};
  for (const f of fields) {
    const from = before[f] ?? null;
    const to = after[f] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) out[f] = { from, to };
  }
  return out;
}

/**
 * The one builder of an audit message (the `AuditMessage` contract), written into the service's own
 * `audit_outbox` by the transaction that makes the change: the change and its record commit
 * together, and the outbox relay carries it to the audit stream. The time is the transaction's
 * `now()`, as for events.
 */
export function auditOutbox(sql: Sql) {
  /**
   * The insert as a fragment, so a statement can write its record in a CTE of its own (one round
   * trip for the change and its record); `onlyIf` is a condition on the statement's other CTEs,
   * e.g. that the change happened.
   */
  function insert(entries: readonly AuditEntry[], onlyIf?: Fragment): Fragment {
    const rows = entries.map((e) => ({
      id: newId("aud"),
      organization_id: e.organizationId,
      action: e.action,
      actor: { type: e.actor.type, id: e.actor.id, user_id: e.actor.user_id },
      target: { type: e.target.type, id: e.target.id },
      changes: e.changes ?? {},
      request_id: e.ctx?.request_id ?? null,
      ip: e.ctx?.ip ?? null,
      user_agent: e.ctx?.user_agent ?? null,
    }));
    return sql`
      insert into audit_outbox (event_id, organization_id, payload)
      select r.id, r.organization_id,
        jsonb_build_object('id', r.id, 'organization_id', r.organization_id, 'action', r.action, 'actor', r.actor,
          'target', r.target, 'changes', r.changes, 'request_id', r.request_id, 'ip', r.ip, 'user_agent', r.user_agent,
          'created_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      from jsonb_to_recordset(${jsonb(sql, rows)}) as r (id text, organization_id text, action text, actor jsonb, target jsonb,
        changes jsonb, request_id text, ip text, user_agent text)
      ${onlyIf === undefined ? sql`` : sql`where ${onlyIf}`}`;
  }
  return {
    insert,
    async write(...entries: readonly AuditEntry[]): Promise<void> {
      if (entries.length === 0) return;
      await insert(entries);
    },
  };
}
export type AuditOutbox = ReturnType<typeof auditOutbox>;

export interface AuditRelayOptions {
  db: Pick<Database, "tx" | "sql">;
  publisher: OutboxPublisher;
  /** The writing service's name: its lock, and the subject its events go out on. */
  service: string;
  namespace: string;
  log: Logger;
  maxPayload?: () => number | undefined;
}

/** One name in every replica and version of a service, whether its relay publishes or chains: only one works the table. */
const auditRelayLock = (service: string) => `${service}.audit_outbox.relay`;

/** Each service relays its own audit outbox, under a lock of its own, setting aside what cannot be sent in its own dead-letter table. */
export function startAuditRelay(o: AuditRelayOptions): OutboxRelay {
  const subject = auditSubject(o.namespace, o.service);
  return startOutboxRelay<OutboxRow>({
    db: o.db,
    publisher: o.publisher,
    table: "audit_outbox",
    lock: auditRelayLock(o.service),
    subject: () => subject,
    log: o.log,
    maxPayload: o.maxPayload,
    deadLetters: "audit_outbox_dead_letters",
  });
}

export interface LocalAuditRelayOptions {
  db: Pick<Database, "tx" | "sql">;
  /** The service that keeps the chain in its own schema. */
  service: string;
  log: Logger;
  /** Stores the messages in the chain, in the relay's transaction. */
  chain(t: Sql, messages: readonly AuditMessage[]): Promise<unknown>;
}

/**
 * The relay of the service that keeps the chain: its own audit events go from its outbox into the
 * chain in one transaction, without the audit stream. A row outside the message's schema is set
 * aside in the dead-letter table, as the publishing relay sets aside what it cannot send.
 */
export function startLocalAuditRelay(o: LocalAuditRelayOptions): OutboxRelay {
  return startOutboxRelay<OutboxRow, AuditMessage>({
    db: o.db,
    table: "audit_outbox",
    lock: auditRelayLock(o.service),
    log: o.log,
    deadLetters: "audit_outbox_dead_letters",
    decode(row) {
      const parsed = AuditMessage.safeParse(row.payload);
      return parsed.success ? { value: parsed.data } : { refused: `outside the audit message schema: ${parsed.error.issues[0]?.message ?? "invalid"}` };
    },
    async deliver(t, messages) {
      await o.chain(t, messages);
    },
  });
}
