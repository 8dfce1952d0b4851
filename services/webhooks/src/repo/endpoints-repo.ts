import type { EventType, WebhookEndpoint } from "@tasksvc/contracts";
import { idempotencyRecords, KEYSET_TIME, keyset, keysetAfter, mapPgError, PG, pageOf, type Sql, auditOutbox } from "@tasksvc/db";
import { type EventSubject, outboxRepo } from "./outbox-repo.js";

export interface SealedSecrets {
  secretSealed: string;
  previousSecretSealed: string | null;
  previousSecretExpiresAt: Date | null;
}

interface EndpointRow {
  id: string;
  url: string;
  enabled: boolean;
  event_types: EventType[];
  verified: boolean;
  disabled_reason: string | null;
  failure_count: number;
  last_success_at: Date | null;
  last_failure_at: Date | null;
  rate_limit: number | null;
  created_at: Date;
  updated_at: Date;
  cursor_at: string;
}

// Never `select *`: the sealed secrets stay in the table unless a query names them.
const COLS = "id, url, enabled, event_types, verified, disabled_reason, failure_count, last_success_at, last_failure_at, rate_limit, created_at, updated_at";
const ENDPOINT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

const toEndpoint = (r: EndpointRow): WebhookEndpoint => ({
  id: r.id,
  url: r.url,
  enabled: r.enabled,
  event_types: r.event_types,
  verified: r.verified,
  disabled_reason: r.disabled_reason,
  failure_count: r.failure_count,
  last_success_at: r.last_success_at?.toISOString() ?? null,
  last_failure_at: r.last_failure_at?.toISOString() ?? null,
  rate_limit: r.rate_limit,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

export interface NewEndpoint {
  id: string;
  organizationId: string;
  url: string;
  eventTypes: EventType[];
  rateLimit: number | null;
  secretSealed: string;
}

export interface SigningTarget {
  url: string;
  verified: boolean;
  secrets: SealedSecrets;
}

interface SigningRow {
  url: string;
  verified: boolean;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
}

export interface Rotated {
  endpoint: WebhookEndpoint;
  previousSecretExpiresAt: string;
}

export class DuplicateEndpointUrl extends Error {
  constructor() {
    super("another endpoint of the organization has this URL");
    this.name = "DuplicateEndpointUrl";
  }
}

const URL_RULES = [{ code: PG.uniqueViolation, constraint: "endpoints_org_url_key", to: () => new DuplicateEndpointUrl() }] as const;

export type Inserted = { endpoint: WebhookEndpoint } | { atCap: number };

export interface EndpointPatch {
  url?: string | undefined;
  event_types?: EventType[] | undefined;
  enabled?: boolean | undefined;
  rate_limit?: number | null | undefined;
}

export function endpointsRepo(sql: Sql) {
  const cols = sql.unsafe(COLS);
  /**
   * A manual disable stops the queued deliveries as an auto-disable does, in the update's own
   * statement, so no dispatcher sees the endpoint disabled with deliveries still queued.
   */
  const disableQueued = sql`, queued as (
          update deliveries d set state = 'DISABLED', next_attempt_at = null, updated_at = clock_timestamp()
          from e where d.endpoint_id = e.id and d.state = 'PENDING'
        )`;
  return {
    /**
     * The count and the insert run under a lock on the organization's endpoints until the transaction
     * ends: two creates at cap - 1 would otherwise both insert.
     */
    async insert(e: NewEndpoint, cap: number): Promise<Inserted> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`webhooks.endpoints:${e.organizationId}`}, 0))`;
      const [held] = await sql<{ n: number }[]>`select count(*)::int as n from endpoints where organization_id = ${e.organizationId}`;
      const n = held?.n ?? 0;
      if (n >= cap) return { atCap: n };
      try {
        const [row] = await sql<EndpointRow[]>`
          insert into endpoints (id, organization_id, url, event_types, rate_limit, secret_sealed)
          values (${e.id}, ${e.organizationId}, ${e.url}, ${e.eventTypes}::text[], ${e.rateLimit}, ${e.secretSealed})
          returning ${cols}, '' as cursor_at`;
        if (!row) throw new Error("insert returned no row");
        return { endpoint: toEndpoint(row) };
      } catch (err) {
        mapPgError(err, URL_RULES);
      }
    },

    async subjects(ids: readonly string[]): Promise<EventSubject[]> {
      if (ids.length === 0) return [];
      const rows = await sql<Array<EndpointRow & { organization_id: string }>>`
        select ${cols}, organization_id, '' as cursor_at from endpoints where id = any(${ids as string[]}::text[]) order by id`;
      return rows.map((r) => ({ organizationId: r.organization_id, endpoint: toEndpoint(r) }));
    },

    async lockEnabled(org: string, id: string): Promise<boolean | undefined> {
      const [row] = await sql<{ enabled: boolean }[]>`select enabled from endpoints where organization_id = ${org} and id = ${id} for no key update`;
      return row?.enabled;
    },

    async get(org: string, id: string): Promise<WebhookEndpoint | undefined> {
      const [row] = await sql<EndpointRow[]>`select ${cols}, '' as cursor_at from endpoints where organization_id = ${org} and id = ${id}`;
      return row && toEndpoint(row);
    },

    async list(org: string, limit: number, after: string | undefined) {
      const rows = await sql<EndpointRow[]>`
        select ${cols}, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at from endpoints
        where organization_id = ${org}
          ${keysetAfter(sql, after, ENDPOINT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toEndpoint, (r) => [r.cursor_at, r.id]);
    },

    /** `enabled: true` resets the failure streak even when already enabled: an old streak would otherwise count its age towards the next auto-disable. */
    async update(org: string, id: string, p: EndpointPatch): Promise<WebhookEndpoint | undefined> {
      // A URL shared before the one-URL rule (migration 0007) stays out of the unique index only while disabled: enabling or moving it takes it in.
      const leavesDuplicate = p.url !== undefined || p.enabled === true;
      const [row] = await sql<EndpointRow[]>`
        with e as (
        update endpoints set
          url = ${p.url === undefined ? sql`url` : sql`${p.url}`},
          duplicate_url = ${leavesDuplicate ? sql`false` : sql`duplicate_url`},
          event_types = ${p.event_types === undefined ? sql`event_types` : sql`${p.event_types}::text[]`},
          enabled = ${p.enabled === undefined ? sql`enabled` : sql`${p.enabled}`},
          failure_count = ${p.enabled === true ? sql`0` : sql`failure_count`},
          failing_since = ${p.enabled === true ? sql`null` : sql`failing_since`},
          rate_limit = ${p.rate_limit === undefined ? sql`rate_limit` : sql`${p.rate_limit}`},
          disabled_reason = ${p.enabled === true ? sql`null` : sql`disabled_reason`},
          updated_at = clock_timestamp()
        where organization_id = ${org} and id = ${id}
        returning ${cols}
        )${p.enabled === false ? disableQueued : sql``}
        select e.*, '' as cursor_at from e`.catch((err: unknown) => mapPgError(err, URL_RULES));
      return row && toEndpoint(row);
    },

    /**
     * One statement: the update locks the row and every right-hand side reads it as it was, so two
     * concurrent rotations queue on the lock and each moves the secret the other left.
     */
    async rotate(org: string, id: string, secretSealed: string): Promise<Rotated | undefined> {
      const [row] = await sql<Array<EndpointRow & { previous_secret_expires_at: Date }>>`
        update endpoints set
          previous_secret_sealed = secret_sealed,
          previous_secret_expires_at = clock_timestamp() + interval '24 hours',
          secret_sealed = ${secretSealed},
          updated_at = clock_timestamp()
        where organization_id = ${org} and id = ${id}
        returning ${cols}, previous_secret_expires_at, '' as cursor_at`;
      return row && { endpoint: toEndpoint(row), previousSecretExpiresAt: row.previous_secret_expires_at.toISOString() };
    },

    /** The one read that names the sealed secrets (never through COLS). */
    async signingTarget(org: string, id: string): Promise<SigningTarget | undefined> {
      const [row] = await sql<SigningRow[]>`
        select url, verified, secret_sealed, previous_secret_sealed, previous_secret_expires_at
        from endpoints where organization_id = ${org} and id = ${id}`;
      return (
        row && {
          url: row.url,
          verified: row.verified,
          secrets: {
            secretSealed: row.secret_sealed,
            previousSecretSealed: row.previous_secret_sealed,
            previousSecretExpiresAt: row.previous_secret_expires_at,
          },
        }
      );
    },

    async markVerified(org: string, id: string): Promise<boolean> {
      const rows = await sql`update endpoints set verified = true, updated_at = clock_timestamp() where organization_id = ${org} and id = ${id} returning 1`;
      return rows.length === 1;
    },

    async remove(org: string, id: string): Promise<boolean> {
      const rows = await sql`delete from endpoints where organization_id = ${org} and id = ${id} returning 1`;
      return rows.length === 1;
    },

    idempotency: idempotencyRecords(sql),
    events: outboxRepo(sql),
    /** Written in the transaction of the change it records. */
    audit: auditOutbox(sql),
  };
}
export type EndpointsRepo = ReturnType<typeof endpointsRepo>;
