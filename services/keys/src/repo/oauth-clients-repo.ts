import type { OAuthClient, Page, Role, Scope } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";
import { array, KEYSET_TIME, keyset, keysetAfter, pageOf } from "@tasksvc/db";
import type { OrgRow } from "./org-row.js";

interface ClientRow {
  id: string;
  name: string;
  client_id: string;
  scopes: Scope[];
  created_by: string;
  created_at: Date;
}

export interface NewOAuthClient {
  id: string;
  organizationId: string;
  name: string;
  clientId: string;
  secretHash: string;
  scopes: readonly Scope[];
  createdBy: string;
  createdAt: Date;
}

export interface ClientTokenRow extends OrgRow {
  client_key: string;
  client_scopes: Scope[];
  role: Role;
}

export function toOAuthClient(r: ClientRow): OAuthClient {
  return { id: r.id, name: r.name, client_id: r.client_id, scopes: r.scopes, created_by: r.created_by, created_at: r.created_at.toISOString() };
}

const CLIENT_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);
const COLUMNS = "id, name, client_id, scopes, created_by, created_at";

export function oauthClientsRepo(sql: Sql) {
  return {
    /** So that a count of the organization's clients stays true until the new one is in. */
    async lockOrganizationClients(orgId: string): Promise<void> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`keys.oauth_clients:${orgId}`}, 0))`;
    },

    async clientCount(orgId: string): Promise<number> {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from oauth_clients where organization_id = ${orgId}`;
      return row?.n ?? 0;
    },

    async insertClient(c: NewOAuthClient): Promise<void> {
      await sql`
        insert into oauth_clients (id, organization_id, name, client_id, secret_hash, scopes, created_by, created_at)
        values (${c.id}, ${c.organizationId}, ${c.name}, ${c.clientId}, ${c.secretHash}, ${array(sql, c.scopes)}, ${c.createdBy}, ${c.createdAt})`;
    },

    async listClients(orgId: string, limit: number, after: string | undefined): Promise<Page<OAuthClient>> {
      const rows = await sql<(ClientRow & { cursor_at: string })[]>`
        select ${sql.unsafe(COLUMNS)}, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at
        from oauth_clients
        where organization_id = ${orgId}
          ${keysetAfter(sql, after, CLIENT_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toOAuthClient, (r) => [r.cursor_at, r.id]);
    },

    async client(orgId: string, id: string): Promise<OAuthClient | undefined> {
      const [row] = await sql<ClientRow[]>`select ${sql.unsafe(COLUMNS)} from oauth_clients where organization_id = ${orgId} and id = ${id}`;
      return row ? toOAuthClient(row) : undefined;
    },

    /** Its revoked tokens go with it (they can no longer resolve). */
    async deleteClient(orgId: string, id: string): Promise<boolean> {
      const r = await sql`delete from oauth_clients where organization_id = ${orgId} and id = ${id}`;
      return r.count === 1;
    },

    /** Only while the creator is a member: a client acts as them. */
    async clientBySecret(
      clientId: string,
      secretHash: string,
    ): Promise<{ id: string; client_id: string; organization_id: string; user_id: string; scopes: Scope[] } | undefined> {
      const [row] = await sql<{ id: string; client_id: string; organization_id: string; user_id: string; scopes: Scope[] }[]>`
        select c.id, c.client_id, c.organization_id, c.created_by as user_id, c.scopes
        from oauth_clients c
        join memberships m on m.organization_id = c.organization_id and m.user_id = c.created_by
        where c.client_id = ${clientId} and c.secret_hash = ${secretHash}`;
      return row;
    },

    /** One lookup: the client still exists, the token is not revoked, its creator is a member (with their role now). */
    async clientToken(a: { clientId: string; orgId: string; userId: string; jti: string }): Promise<ClientTokenRow | undefined> {
      const [row] = await sql<ClientTokenRow[]>`
        select c.id as client_key, c.scopes as client_scopes, m.role,
               o.id, o.name, o.plan, o.burst, o.quota, o.max_file_size, o.storage, o.webhook_endpoints, o.scans, o.created_at
        from oauth_clients c
        join memberships m on m.organization_id = c.organization_id and m.user_id = c.created_by
        join organizations o on o.id = c.organization_id
        where c.client_id = ${a.clientId} and c.organization_id = ${a.orgId} and c.created_by = ${a.userId}
          and not exists (select 1 from oauth_revoked_tokens r where r.jti = ${a.jti})`;
      return row;
    },

    async revokeToken(a: { clientId: string; orgId: string; jti: string; expiresAt: Date }): Promise<boolean> {
      const rows = await sql`
        insert into oauth_revoked_tokens (jti, client_id, expires_at)
        select ${a.jti}, c.id, ${a.expiresAt} from oauth_clients c where c.client_id = ${a.clientId} and c.organization_id = ${a.orgId}
        on conflict (jti) do nothing
        returning jti`;
      return rows.length === 1;
    },

    /** A revoked token past its expiry is refused for its expiry alone. */
    async sweepRevokedTokens(): Promise<number> {
      const r = await sql`delete from oauth_revoked_tokens where expires_at < now() - interval '5 minutes'`;
      return r.count;
    },
  };
}
