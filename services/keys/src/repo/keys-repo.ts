import type { Sql } from "@tasksvc/db";
import { type AuditEntry, array, auditOutbox, idempotencyRecords, jsonb, KEYSET_TIME, keyset, keysetAfter, pageOf } from "@tasksvc/db";
import type { ApiKey, Member, Organization, Page, Plan, Role, Scope } from "@tasksvc/contracts";
import { membersRepo } from "./members-repo.js";
import type { LimitOverrides, OrgRow } from "./org-row.js";
import { oauthClientsRepo } from "./oauth-clients-repo.js";

export type { OrgRow } from "./org-row.js";

export interface KeyIdentityRow extends OrgRow {
  key_id: string;
  user_id: string;
  scopes: Scope[];
  expires_at: Date | null;
  role: Role;
}

interface KeyRow {
  id: string;
  name: string | null;
  key_prefix: string;
  scopes: Scope[];
  last_used_at: Date | null;
  expires_at: Date | null;
  created_at: Date;
  legacy: boolean;
}

export interface NewKey {
  id: string;
  organizationId: string;
  userId: string;
  name: string | null;
  keyHash: string;
  keyPrefix: string;
  scopes: readonly Scope[];
  legacy: boolean;
  testMode: boolean;
  expiresAt: Date | null;
}

const iso = (d: Date) => d.toISOString();
// Keyset positions are cast from text in SQL: a timestamp parameter would go through a JS Date
// in postgres.js and lose the microseconds (and rows at page edges).
const isoOrNull = (d: Date | null) => (d ? d.toISOString() : null);

export function toOrganization(r: OrgRow): Organization {
  return { id: r.id, name: r.name, plan: r.plan, created_at: iso(r.created_at) };
}

export function toApiKey(r: KeyRow): ApiKey {
  return {
    id: r.id,
    name: r.name,
    key_prefix: r.key_prefix,
    scopes: r.scopes,
    last_used_at: isoOrNull(r.last_used_at),
    expires_at: isoOrNull(r.expires_at),
    created_at: iso(r.created_at),
    legacy: r.legacy,
  };
}

const KEY_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
const MEMBER_PAGES = keyset("asc", ["m.created_at", "timestamp"], ["m.user_id", "text"]);

export function keysRepo(sql: Sql) {
  const audit = auditOutbox(sql);
  return {
    ...membersRepo(sql),
    ...oauthClientsRepo(sql),
    idempotency: idempotencyRecords(sql),
    /** Written in the transaction of the change it records. */
    audit,

    async identityByKeyHash(keyHash: string): Promise<KeyIdentityRow | undefined> {
      // A key acts as its creator: no current membership, no identity (a removed user's keys stop).
      const [row] = await sql<KeyIdentityRow[]>`
        select k.id as key_id, k.user_id, k.scopes, k.expires_at, m.role,
               o.id, o.name, o.plan, o.burst, o.quota, o.max_file_size, o.storage, o.webhook_endpoints, o.scans, o.created_at
        from api_keys k
        join organizations o on o.id = k.organization_id
        join memberships m on m.organization_id = k.organization_id and m.user_id = k.user_id
        where k.key_hash = ${keyHash}
          and k.revoked_at is null
          and (k.expires_at is null or k.expires_at > now())`;
      return row;
    },

    /** Coalesced: at most one write per key per minute however many requests it serves. */
    async touchKey(keyId: string): Promise<void> {
      await sql`
        update api_keys set last_used_at = now()
        where id = ${keyId} and (last_used_at is null or last_used_at < now() - interval '60 seconds')`;
    },

    async membership(orgId: string, userId: string): Promise<{ org: OrgRow; role: Role } | undefined> {
      const [row] = await sql<(OrgRow & { role: Role })[]>`
        select o.*, m.role from memberships m join organizations o on o.id = m.organization_id
        where m.organization_id = ${orgId} and m.user_id = ${userId}`;
      if (!row) return undefined;
      const { role, ...org } = row;
      return { org, role };
    },

    /** One lookup on the memberships primary key. */
    async currentMembers(orgId: string, userIds: readonly string[]): Promise<string[]> {
      const rows = await sql<{ user_id: string }[]>`
        select user_id from memberships where organization_id = ${orgId} and user_id = any(${array(sql, userIds)})`;
      return rows.map((r) => r.user_id);
    },

    /** One lookup a user on the users primary key. */
    async userEmails(userIds: readonly string[]): Promise<Array<{ id: string; email: string }>> {
      return sql<{ id: string; email: string }[]>`select id, email from users where id = any(${array(sql, userIds)})`;
    },

    /** On users_email_key; `emails` lower-cased. Each answer carries the email as stored. */
    async membersByEmail(orgId: string, emails: readonly string[]): Promise<Array<{ email: string; user_id: string }>> {
      return sql<{ email: string; user_id: string }[]>`
        select u.email, u.id as user_id from users u join memberships m on m.user_id = u.id and m.organization_id = ${orgId}
        where lower(u.email) = any(${array(sql, emails)})`;
    },

    /** Until the transaction ends, so a change's before and after are its own. */
    async lockOrganization(orgId: string): Promise<OrgRow | undefined> {
      const [row] = await sql<OrgRow[]>`select * from organizations where id = ${orgId} for update`;
      return row;
    },

    async organization(orgId: string): Promise<OrgRow | undefined> {
      const [row] = await sql<OrgRow[]>`select * from organizations where id = ${orgId}`;
      return row;
    },

    async insertOrganization(id: string, name: string, plan: Plan): Promise<void> {
      await sql`insert into organizations (id, name, plan) values (${id}, ${name}, ${plan})`;
    },

    /** Users are global (one person, several organizations). */
    async upsertUser(id: string, email: string): Promise<string> {
      const [row] = await sql<{ id: string }[]>`
        insert into users (id, email) values (${id}, ${email})
        on conflict ((lower(email))) do update set email = users.email
        returning id`;
      if (!row) throw new Error("upsert returned no row");
      return row.id;
    },

    async upsertMembership(orgId: string, userId: string, role: Role): Promise<void> {
      await sql`
        insert into memberships (organization_id, user_id, role) values (${orgId}, ${userId}, ${role})
        on conflict (organization_id, user_id) do update set role = excluded.role`;
    },

    /** Serializes bootstraps of one organization name and owner email (until the transaction ends). */
    async lockBootstrap(name: string, email: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`keys.bootstrap:${name}\n${email.toLowerCase()}`}, 0))`;
    },

    async bootstrapped(name: string, email: string): Promise<{ organization_id: string; user_id: string } | undefined> {
      const [row] = await sql<{ organization_id: string; user_id: string }[]>`
        select o.id as organization_id, u.id as user_id
        from organizations o
        join memberships m on m.organization_id = o.id and m.role = 'owner'
        join users u on u.id = m.user_id and lower(u.email) = lower(${email})
        where o.name = ${name}
        order by o.created_at, o.id
        limit 1`;
      return row;
    },

    /** Locked until the transaction ends (a last-owner check). */
    async lockOwners(orgId: string): Promise<string[]> {
      const rows = await sql<{ user_id: string }[]>`
        select user_id from memberships where organization_id = ${orgId} and role = 'owner' order by user_id for update`;
      return rows.map((r) => r.user_id);
    },

    /** Legacy keys are revoked soft, kept for audit. */
    async removeMembership(orgId: string, userId: string): Promise<{ removed: boolean; revokedKeys: number }> {
      const gone = await sql`delete from memberships where organization_id = ${orgId} and user_id = ${userId}`;
      if (gone.count !== 1) return { removed: false, revokedKeys: 0 };
      const soft = await sql`
        update api_keys set revoked_at = now()
        where organization_id = ${orgId} and user_id = ${userId} and legacy and revoked_at is null`;
      const hard = await sql`delete from api_keys where organization_id = ${orgId} and user_id = ${userId} and not legacy`;
      // Their OAuth clients act as them, so they go too.
      await sql`delete from oauth_clients where organization_id = ${orgId} and created_by = ${userId}`;
      return { removed: true, revokedKeys: soft.count + hard.count };
    },

    async setRole(orgId: string, userId: string, role: Role): Promise<boolean> {
      const r = await sql`update memberships set role = ${role} where organization_id = ${orgId} and user_id = ${userId}`;
      return r.count === 1;
    },

    async setPlan(orgId: string, plan: Plan): Promise<boolean> {
      const r = await sql`update organizations set plan = ${plan} where id = ${orgId}`;
      return r.count === 1;
    },

    async setLimits(orgId: string, l: LimitOverrides): Promise<OrgRow | undefined> {
      const [row] = await sql<OrgRow[]>`
        update organizations set
          burst = coalesce(${l.burst ?? null}::integer, burst),
          quota = coalesce(${l.quota ?? null}::integer, quota),
          max_file_size = coalesce(${l.max_file_size ?? null}::bigint, max_file_size),
          storage = coalesce(${l.storage ?? null}::bigint, storage),
          webhook_endpoints = coalesce(${l.webhook_endpoints ?? null}::integer, webhook_endpoints),
          scans = coalesce(${l.scans ?? null}::integer, scans)
        where id = ${orgId}
        returning *`;
      return row;
    },

    /**
     * One statement (decision 0020). `limitReached` is exact only under lockOrganizationKeys()
     * taken by an earlier statement of the transaction: a statement's snapshot predates any lock it
     * takes itself. `recordedMeanwhile`: a twin recorded the key after this snapshot; its record is
     * the answer. `created`, the key's audit event, is written only with the key. Sent at the call
     * (a transaction may commit ahead).
     */
    async mintApiKey(
      k: NewKey & { createdAt: Date },
      once: { credentialId: string; key: string; result: unknown } | null,
      maxLive: number,
      created?: AuditEntry,
    ): Promise<
      | { kind: "replay"; operation: string; result: unknown }
      | { kind: "forbidden"; role: Role | null }
      | { kind: "limitReached"; live: number }
      | { kind: "minted" }
      | { kind: "recordedMeanwhile" }
    > {
      const [row] = await sql<{ prior_operation: string | null; prior_result: unknown; role: Role | null; live: number; inserted: number }[]>`
        with prior as (
          select operation, result from idempotency
          where ${once !== null} and credential_id = ${once?.credentialId ?? ""} and key = ${once?.key ?? ""}
            and created_at > now() - interval '24 hours'
        ), member as (
          select role from memberships where organization_id = ${k.organizationId} and user_id = ${k.userId}
        ), live as (
          select count(*)::int as n from api_keys
          where organization_id = ${k.organizationId} and revoked_at is null and (expires_at is null or expires_at > now())
        ), allowed as (
          select 1 as ok from member, live
          where role in ('owner', 'admin') and not exists (select 1 from prior) and live.n < ${maxLive}
        ), recorded as (
          insert into idempotency as i (credential_id, key, operation, result)
          select ${once?.credentialId ?? ""}, ${once?.key ?? ""}, 'createApiKey', ${jsonb(sql, once?.result ?? null)}
          from allowed where ${once !== null}
          on conflict (credential_id, key) do update set operation = excluded.operation, result = excluded.result, created_at = now()
            where i.created_at <= now() - interval '24 hours'
          returning 1 as ok
        ), go as (
          select ok from recorded union all select ok from allowed where ${once === null}
        ), inserted as (
          insert into api_keys (id, organization_id, user_id, name, key_hash, key_prefix, scopes, legacy, test_mode, expires_at, created_at)
          select ${k.id}, ${k.organizationId}, ${k.userId}, ${k.name}, ${k.keyHash}, ${k.keyPrefix},
                 ${array(sql, k.scopes)}, ${k.legacy}, ${k.testMode}, ${k.expiresAt}, ${k.createdAt}
          from go
          returning id
        ), audited as (
          ${created === undefined ? sql`select` : sql`${audit.insert([created], sql`exists (select 1 from inserted)`)} returning 1`}
        )
        select (select operation from prior) as prior_operation, (select result from prior) as prior_result,
          (select role from member) as role, (select n from live) as live, (select count(*) from inserted)::int as inserted`.execute();
      if (!row) throw new Error("the mint statement returned no row");
      if (row.prior_operation !== null) return { kind: "replay", operation: row.prior_operation, result: row.prior_result };
      if (row.role !== "owner" && row.role !== "admin") return { kind: "forbidden", role: row.role };
      if (row.live >= maxLive) return { kind: "limitReached", live: row.live };
      return row.inserted === 1 ? { kind: "minted" } : { kind: "recordedMeanwhile" };
    },

    /** So that a count of the organization's live keys stays true until the new key is in. Sent at the call (a transaction may commit ahead). */
    async lockOrganizationKeys(orgId: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`keys.api_keys:${orgId}`}, 0))`.execute();
    },

    /** Keys that still authenticate (legacy and sandbox keys included). */
    async liveKeyCount(orgId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from api_keys
        where organization_id = ${orgId} and revoked_at is null and (expires_at is null or expires_at > now())`;
      return row?.n ?? 0;
    },

    async insertKey(k: NewKey): Promise<KeyRow> {
      const [row] = await sql<KeyRow[]>`
        insert into api_keys (id, organization_id, user_id, name, key_hash, key_prefix, scopes, legacy, test_mode, expires_at)
        values (${k.id}, ${k.organizationId}, ${k.userId}, ${k.name}, ${k.keyHash}, ${k.keyPrefix},
                ${array(sql, k.scopes)}, ${k.legacy}, ${k.testMode}, ${k.expiresAt})
        returning id, name, key_prefix, scopes, last_used_at, expires_at, created_at, legacy`;
      if (!row) throw new Error("insert returned no row");
      return row;
    },

    async listKeys(orgId: string, limit: number, after: string | undefined): Promise<Page<ApiKey>> {
      const rows = await sql<(KeyRow & { cursor_at: string })[]>`
        select id, name, key_prefix, scopes, last_used_at, expires_at, created_at, legacy,
               to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at
        from api_keys
        where organization_id = ${orgId} and revoked_at is null
          ${keysetAfter(sql, after, KEY_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toApiKey, (r) => [r.cursor_at, r.id]);
    },

    async liveKey(orgId: string, keyId: string): Promise<{ id: string; legacy: boolean } | undefined> {
      const [row] = await sql<{ id: string; legacy: boolean }[]>`
        select id, legacy from api_keys where id = ${keyId} and organization_id = ${orgId} and revoked_at is null`;
      return row;
    },

    async softRevokeKey(keyId: string): Promise<boolean> {
      const r = await sql`update api_keys set revoked_at = now() where id = ${keyId} and revoked_at is null`;
      return r.count === 1;
    },

    async deleteKey(keyId: string): Promise<boolean> {
      const r = await sql`delete from api_keys where id = ${keyId}`;
      return r.count === 1;
    },

    async listMembers(orgId: string, limit: number, after: string | undefined): Promise<Page<Member>> {
      const rows = await sql<{ user_id: string; email: string; role: Role; created_at: Date; cursor_at: string }[]>`
        select m.user_id, u.email, m.role, m.created_at,
               to_char(m.created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at
        from memberships m join users u on u.id = m.user_id
        where m.organization_id = ${orgId}
          ${keysetAfter(sql, after, MEMBER_PAGES)}
        order by m.created_at, m.user_id
        limit ${limit + 1}`;
      return pageOf(
        rows,
        limit,
        (r) => ({ user_id: r.user_id, email: r.email, role: r.role, created_at: iso(r.created_at) }),
        (r) => [r.cursor_at, r.user_id],
      );
    },

    async signingKey(): Promise<SigningKeyRow | undefined> {
      const [row] = await sql<SigningKeyRow[]>`
        select kid, private_jwk, private_key_sealed, public_jwk from signing_keys order by created_at limit 1`;
      return row;
    },

    async insertSigningKey(kid: string, privateKeySealed: string, publicJwk: object): Promise<void> {
      // Replicas starting together may both generate a key; the first one stored wins.
      await sql`insert into signing_keys (kid, private_key_sealed, public_jwk) values (${kid}, ${privateKeySealed}, ${jsonb(sql, publicJwk)})
                on conflict do nothing`;
    },

    async plainSigningKeys(): Promise<Array<{ kid: string; private_jwk: Record<string, unknown> }>> {
      return sql<{ kid: string; private_jwk: Record<string, unknown> }[]>`select kid, private_jwk from signing_keys where private_jwk is not null`;
    },

    /** Of replicas sealing together, one updates the row and the others find nothing left to do. */
    async sealSigningKey(kid: string, privateKeySealed: string): Promise<boolean> {
      const rows = await sql`update signing_keys set private_key_sealed = ${privateKeySealed}, private_jwk = null
                             where kid = ${kid} and private_jwk is not null returning kid`;
      return rows.length > 0;
    },

    /** Only if the row still holds that very key: of replicas replacing together, the first one wins. */
    async replaceSigningKey(kid: string, staleSealed: string, privateKeySealed: string, publicJwk: object): Promise<boolean> {
      const rows = await sql`update signing_keys set private_key_sealed = ${privateKeySealed}, public_jwk = ${jsonb(sql, publicJwk)}, private_jwk = null
                             where kid = ${kid} and private_key_sealed = ${staleSealed} returning kid`;
      return rows.length > 0;
    },
  };
}
export type KeysRepo = ReturnType<typeof keysRepo>;

export interface SigningKeyRow {
  kid: string;
  /** Set only on a row stored plain by an older release, until the service seals it. */
  private_jwk: Record<string, unknown> | null;
  private_key_sealed: string | null;
  public_jwk: Record<string, unknown>;
}
