import { randomBytes } from "node:crypto";
import type { Sql } from "@tasksvc/db";

export interface ReserveRow {
  outcome: "ok" | "rate_limited" | "quota_exhausted";
  granted: number;
  /** Reserved calls included. */
  burst_count: number;
  quota_count: string;
  window_start: Date;
  window_end: Date;
  period_start: Date;
  period_end: Date;
  /** As Postgres text: exact to the microsecond, for release(). */
  window_key: string;
  period_key: string;
  credentialId: string;
  organizationId: string;
}

/** The counters after it (unchanged when refused). */
export interface ExactChargeRow {
  outcome: "ok" | "rate_limited" | "quota_exhausted";
  burst_count: number;
  quota_count: string;
  window_start: Date;
  window_end: Date;
  period_start: Date;
  period_end: Date;
}

/** A key to claim for one request. */
export interface Claimed {
  credentialId: string;
  key: string;
  fingerprint: string;
}

/** A request's outcome, stored under its key. */
export interface Outcome {
  credentialId: string;
  key: string;
  status: number;
  body: string;
  headers: Record<string, string>;
  replayFromService?: boolean;
}

const idOf = (c: { credentialId: string; key: string }) => `${c.credentialId}\u0000${c.key}`;

export interface StoredOutcome {
  fingerprint: string;
  status: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
  /** The body held a secret, so it was not stored: a replay asks the service again. */
  replay_from_service: boolean;
}

export interface ChargeLimits {
  credentialId: string;
  burst: number;
  windowSeconds: number;
  orgId: string;
  /** Billing periods count from it. */
  anchor: string;
  quota: number;
  periodSeconds: number;
}

export function gatewayRepo(sql: Sql) {
  /** Every idempotent operation's service records the key with its result itself, so a record lost in a crash lets a retry through to it (decision 0008). */
  const asyncCommit = () => sql`(select set_config('synchronous_commit', 'off', true)) as commit_mode`;

  /** Taken again only from a claim whose day is over, or from the same request whose lease ran out unanswered. */
  const onClaimedAlready = () => sql`
    on conflict (credential_id, key) do update
      set fingerprint = excluded.fingerprint, status = null, response_body = null,
          response_headers = null, replay_from_service = false, locked_until = excluded.locked_until, created_at = now()
      where k.created_at < now() - interval '24 hours'
         or (k.status is null and k.locked_until < now() and k.fingerprint = excluded.fingerprint)
    returning k.credential_id, k.key`;

  /**
   * Claims several keys in one statement, each answered in order: true when this claim holds it.
   * A key given twice is claimed once, by its first; the rows are written in key order, so two
   * replicas' statements that meet on the same keys wait for each other rather than deadlock. One
   * key alone goes in a plain statement, cheaper than unnesting arrays of one.
   */
  async function claimIdempotencyKeys(claims: readonly Claimed[], leaseMs: number): Promise<boolean[]> {
    const first = new Map<string, number>();
    for (const [i, c] of claims.entries()) if (!first.has(idOf(c))) first.set(idOf(c), i);
    const unique = [...first.values()].map((i) => claims[i] as Claimed).sort((a, b) => (idOf(a) < idOf(b) ? -1 : 1));
    const [one] = unique;
    const rows =
      unique.length === 1 && one
        ? await sql<{ credential_id: string; key: string }[]>`
          insert into idempotency_keys as k (credential_id, key, fingerprint, locked_until)
          select ${one.credentialId}, ${one.key}, ${one.fingerprint}, now() + ${leaseMs} * interval '1 millisecond'
          from ${asyncCommit()}
          ${onClaimedAlready()}`
        : await sql<{ credential_id: string; key: string }[]>`
          insert into idempotency_keys as k (credential_id, key, fingerprint, locked_until)
          select v.credential_id, v.key, v.fingerprint, now() + ${leaseMs} * interval '1 millisecond'
          from unnest(${unique.map((c) => c.credentialId)}::text[], ${unique.map((c) => c.key)}::text[], ${unique.map((c) => c.fingerprint)}::text[])
                 with ordinality as v(credential_id, key, fingerprint, n),
               ${asyncCommit()}
          order by v.n
          ${onClaimedAlready()}`;
    const won = new Set(rows.map((r) => idOf({ credentialId: r.credential_id, key: r.key })));
    return claims.map((c, i) => first.get(idOf(c)) === i && won.has(idOf(c)));
  }

  /** Several outcomes in one statement (one alone in a plain one); a body held for the service is not stored, only its status. */
  async function storeIdempotentOutcomes(outcomes: readonly Outcome[]): Promise<void> {
    const [one] = outcomes;
    if (outcomes.length === 1 && one) {
      await sql`
        update idempotency_keys set status = ${one.status}, response_body = ${one.replayFromService ? "" : one.body},
          response_headers = ${sql.json(one.headers)}, locked_until = null, replay_from_service = ${one.replayFromService === true}
        from ${asyncCommit()}
        where credential_id = ${one.credentialId} and key = ${one.key}`;
      return;
    }
    await sql`
      update idempotency_keys as k set status = v.status, response_body = v.body,
        response_headers = v.headers::jsonb, locked_until = null, replay_from_service = v.from_service::boolean
      from unnest(${outcomes.map((o) => o.credentialId)}::text[], ${outcomes.map((o) => o.key)}::text[], ${outcomes.map((o) => o.status)}::int[],
                  ${outcomes.map((o) => (o.replayFromService ? "" : o.body))}::text[], ${outcomes.map((o) => JSON.stringify(o.headers))}::text[],
                  ${outcomes.map((o) => (o.replayFromService === true ? "true" : "false"))}::text[])
             as v(credential_id, key, status, body, headers, from_service),
           ${asyncCommit()}
      where k.credential_id = v.credential_id and k.key = v.key`;
  }

  return {
    /** Decision 0007. */
    async reserve(a: ChargeLimits & { want: number }): Promise<ReserveRow> {
      const [row] = await sql<Omit<ReserveRow, "credentialId" | "organizationId">[]>`
        select r.*, r.window_start::text as window_key, r.period_start::text as period_key from charge_reserve(${a.credentialId}, ${a.burst}, ${a.windowSeconds}, ${a.orgId}, ${a.anchor}::text::timestamptz, ${a.quota}, ${a.periodSeconds}, ${a.want}) r`;
      if (!row) throw new Error("charge_reserve() returned no row");
      return { ...row, credentialId: a.credentialId, organizationId: a.orgId };
    },

    /** A refusal counts nothing and says which limit refused. */
    async chargeExact(a: ChargeLimits & { n: number }): Promise<ExactChargeRow> {
      const [row] = await sql<ExactChargeRow[]>`
        select r.* from charge_exact(${a.credentialId}, ${a.burst}, ${a.windowSeconds}, ${a.orgId}, ${a.anchor}::text::timestamptz, ${a.quota}, ${a.periodSeconds}, ${a.n}) r`;
      if (!row) throw new Error("charge_exact() returned no row");
      return row;
    },

    async release(credentialId: string, windowKey: string, orgId: string, periodKey: string, n: number): Promise<void> {
      await sql`select charge_release(${credentialId}, ${windowKey}::text::timestamptz, ${orgId}, ${periodKey}::text::timestamptz, ${n})`;
    },

    /** A gateway that died mid-request blocks the key only until its lease ends. */
    claimIdempotencyKeys,

    async idempotencyRecord(credentialId: string, key: string): Promise<StoredOutcome | undefined> {
      const [row] = await sql<StoredOutcome[]>`
        select fingerprint, status, response_body, response_headers, replay_from_service from idempotency_keys
        where credential_id = ${credentialId} and key = ${key}`;
      return row;
    },

    storeIdempotentOutcomes,

    /** The outcome is unknown (5xx) or the request was never executed (429). */
    async releaseIdempotencyKey(credentialId: string, key: string): Promise<void> {
      await sql`delete from idempotency_keys where credential_id = ${credentialId} and key = ${key} and status is null`;
    },

    async secret(name: string): Promise<string> {
      await sql`insert into secrets (name, value) values (${name}, ${randomBytes(32).toString("hex")}) on conflict do nothing`;
      const [row] = await sql<{ value: string }[]>`select value from secrets where name = ${name}`;
      if (!row) throw new Error(`secret ${name} vanished`);
      return row.value;
    },

    async openStream(a: {
      id: string;
      credentialId: string;
      orgId: string;
      replica: string;
      max: number;
      orgMax: number;
      leaseSeconds: number;
    }): Promise<"ok" | "credential" | "organization"> {
      const [row] = await sql<{ outcome: "ok" | "credential" | "organization" }[]>`
        select stream_open_in_org(${a.id}, ${a.credentialId}, ${a.orgId}, ${a.replica}, ${a.max}, ${a.orgMax}, ${a.leaseSeconds}) as outcome`;
      if (!row) throw new Error("stream_open_in_org() returned no row");
      return row.outcome;
    },

    async closeStream(id: string): Promise<void> {
      await sql`delete from event_streams where id = ${id}`;
    },

    /** Not a place given back if opened in the last seconds: it may have been opened while this statement was on its way. */
    async renewStreams(replica: string, leaseSeconds: number, open: readonly string[]): Promise<void> {
      await sql`
        with renewed as (
          insert into stream_replicas (replica, expires_at) values (${replica}, now() + make_interval(secs => ${leaseSeconds}))
          on conflict (replica) do update set expires_at = excluded.expires_at)
        delete from event_streams
        where replica = ${replica} and id <> all(${open as string[]}::text[]) and opened_at < now() - interval '10 seconds'`;
    },

    async closeReplica(replica: string): Promise<void> {
      await sql`delete from event_streams where replica = ${replica}`;
      await sql`delete from stream_replicas where replica = ${replica}`;
    },

    async sweep(): Promise<void> {
      await sql`delete from idempotency_keys where created_at < now() - interval '24 hours'`;
      await sql`delete from burst_counters where window_start < now() - interval '1 hour'`;
      await sql`
        with dead as (delete from stream_replicas where expires_at < now() - interval '1 minute' returning replica)
        delete from event_streams where replica in (select replica from dead)`;
    },
  };
}
export type GatewayRepo = ReturnType<typeof gatewayRepo>;
