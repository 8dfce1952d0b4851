import type { Invitation, InvitationStatus, Member, Page, Role } from "@tasksvc/contracts";
import type { Sql } from "@tasksvc/db";
import { KEYSET_TIME, keyset, keysetAfter, pageOf } from "@tasksvc/db";

interface MemberRow {
  user_id: string;
  email: string;
  role: Role;
  created_at: Date;
}

interface InvitationRow {
  id: string;
  email: string;
  role: Role;
  status: InvitationStatus;
  expires_at: Date;
  created_at: Date;
}

export interface NewInvitation {
  id: string;
  organizationId: string;
  email: string;
  role: Role;
  tokenHash: string;
  invitedBy: string;
  expiresAt: Date;
  createdAt: Date;
}

const toMember = (r: MemberRow): Member => ({ user_id: r.user_id, email: r.email, role: r.role, created_at: r.created_at.toISOString() });

export const toInvitation = (r: InvitationRow): Invitation => ({
  id: r.id,
  email: r.email,
  role: r.role,
  status: r.status,
  expires_at: r.expires_at.toISOString(),
  created_at: r.created_at.toISOString(),
});

const INVITATION_PAGES = keyset("desc", ["created_at", "timestamp"], ["id", "text"]);

/** One definition of an invitation's status, for every statement that answers one. */
const STATUS = `case when accepted_at is not null then 'accepted' when revoked_at is not null then 'revoked'
  when expires_at <= now() then 'expired' else 'pending' end`;
const INVITATION_COLUMNS = `id, email, role, (${STATUS}) as status, expires_at, created_at`;

/** Memberships one at a time, and invitations. */
export function membersRepo(sql: Sql) {
  const invitationColumns = () => sql.unsafe(INVITATION_COLUMNS);
  return {
    async member(orgId: string, userId: string): Promise<Member | undefined> {
      const [row] = await sql<MemberRow[]>`
        select m.user_id, u.email, m.role, m.created_at from memberships m join users u on u.id = m.user_id
        where m.organization_id = ${orgId} and m.user_id = ${userId}`;
      return row && toMember(row);
    },

    /** Locked until the transaction ends, so its role cannot change under a check. */
    async lockMember(orgId: string, userId: string): Promise<Role | undefined> {
      const [row] = await sql<{ role: Role }[]>`
        select role from memberships where organization_id = ${orgId} and user_id = ${userId} for update`;
      return row?.role;
    },

    async memberByEmail(orgId: string, email: string): Promise<boolean> {
      const [row] = await sql`
        select 1 from memberships m join users u on u.id = m.user_id
        where m.organization_id = ${orgId} and lower(u.email) = lower(${email})`;
      return row !== undefined;
    },

    /** False when the user is a member already (their role stays). */
    async insertMembership(orgId: string, userId: string, role: Role): Promise<boolean> {
      const rows = await sql`
        insert into memberships (organization_id, user_id, role) values (${orgId}, ${userId}, ${role})
        on conflict (organization_id, user_id) do nothing
        returning 1`;
      return rows.length === 1;
    },

    /** Counted under a lock on the organization's invitations, held to the commit, so two creates cannot both take the last place. */
    async lockPendingInvitations(orgId: string): Promise<number> {
      await sql`select pg_advisory_xact_lock(hashtextextended(${`keys.invitations:${orgId}`}, 0))`;
      const [row] = await sql<{ n: number }[]>`
        select count(*)::int as n from invitations
        where organization_id = ${orgId} and accepted_at is null and revoked_at is null and expires_at > now()`;
      return row?.n ?? 0;
    },

    async insertInvitation(i: NewInvitation): Promise<void> {
      await sql`
        insert into invitations (id, organization_id, email, role, token_hash, invited_by, expires_at, created_at)
        values (${i.id}, ${i.organizationId}, ${i.email}, ${i.role}, ${i.tokenHash}, ${i.invitedBy}, ${i.expiresAt}, ${i.createdAt})`;
    },

    async invitation(orgId: string, id: string): Promise<Invitation | undefined> {
      const [row] = await sql<InvitationRow[]>`select ${invitationColumns()} from invitations where id = ${id} and organization_id = ${orgId}`;
      return row && toInvitation(row);
    },

    async listInvitations(orgId: string, limit: number, after: string | undefined): Promise<Page<Invitation>> {
      const rows = await sql<(InvitationRow & { cursor_at: string })[]>`
        select ${invitationColumns()}, to_char(created_at at time zone 'UTC', ${sql.unsafe(KEYSET_TIME)}) as cursor_at
        from invitations
        where organization_id = ${orgId}
          ${keysetAfter(sql, after, INVITATION_PAGES)}
        order by created_at desc, id desc
        limit ${limit + 1}`;
      return pageOf(rows, limit, toInvitation, (r) => [r.cursor_at, r.id]);
    },

    /** An accepted invitation stays accepted; a revoked one keeps its first revocation time. */
    /** False when it was accepted or revoked already. */
    async revokeInvitation(orgId: string, id: string): Promise<boolean> {
      const r = await sql`
        update invitations set revoked_at = now()
        where id = ${id} and organization_id = ${orgId} and accepted_at is null and revoked_at is null`;
      return r.count === 1;
    },

    /**
     * Marks a pending invitation accepted. Of two accepts of one token at once, the second waits for
     * the first's row lock and then finds it accepted (or pending again, if the first rolled back).
     */
    async claimInvitation(tokenHash: string): Promise<{ id: string; organization_id: string; email: string; role: Role } | undefined> {
      const [row] = await sql<{ id: string; organization_id: string; email: string; role: Role }[]>`
        update invitations set accepted_at = now()
        where token_hash = ${tokenHash} and accepted_at is null and revoked_at is null and expires_at > now()
        returning id, organization_id, email, role`;
      return row;
    },

    async recordAcceptedBy(id: string, userId: string): Promise<void> {
      await sql`update invitations set accepted_user_id = ${userId} where id = ${id}`;
    },
  };
}
