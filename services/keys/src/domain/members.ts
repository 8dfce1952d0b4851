import {
  type Actor as AuditActor,
  actorOf,
  DEFAULT_KEY_SCOPES,
  INVITATION_TTL_DAYS,
  MAX_PENDING_INVITATIONS,
  type AcceptedInvitation,
  type AcceptInvitationBody,
  type Caller,
  type CreatedInvitation,
  type CreateInvitationBody,
  type Invitation,
  type Member,
  type Page,
  type Role,
  type RpcContext,
  type Scope,
} from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import type { KeysRepo } from "../repo/keys-repo.js";
import type { KeysResources } from "./resources.js";
import { hashKey, mintInvitationToken } from "./secrets.js";

/** Who asks, as the audit log records it. */
export interface By {
  actor: AuditActor;
  ctx: RpcContext;
}

/** A live key without expiry, within the organization's limit of live keys; answers the secret. `r` is a transaction's repo. */
export type MintKey = (r: KeysRepo, a: { orgId: string; userId: string; name: string; scopes: readonly Scope[] }, by: By) => Promise<string>;

type Change = { kind: "role"; role: Role } | { kind: "remove" };
/** Null for the admin CLI: it acts with the trust of NATS and is held to the last-owner rule only. */
type Actor = { userId: string } | null;

/** The token is sealed, so no table holds a usable invitation; a replay opens it again. */
type RecordedInvitation = Omit<CreatedInvitation, "token"> & { token_sealed: string };

const DAY_MS = 86_400_000;

const isManager = (role: Role | undefined) => role === "owner" || role === "admin";
const who = (role: Role | undefined) => (role ? `a ${role}` : "not a member");

// One message for a former member, another organization's user and an unknown id: no existence oracle.
const notMember = (userId: string) => new AppError("resource_not_found", `User ${userId} is not a member of this organization.`);

export const lastOwner = (userId: string) =>
  new AppError("last_owner", `User ${userId} is the organization's last owner and stays one: make another member an owner first.`);

/**
 * Under the owners' lock, in this order: the target, the last-owner rule, then the caller's role as
 * it is now. Two owners demoting each other at once queue on that lock, and the second then meets
 * the last-owner rule, whatever role it holds by then. Answers the target's role before the change.
 */
async function checkChange(r: KeysRepo, orgId: string, actor: Actor, userId: string, change: Change): Promise<Role> {
  const owners = await r.lockOwners(orgId);
  const role = await r.lockMember(orgId, userId);
  if (role === undefined) throw notMember(userId);
  const stopsOwning = role === "owner" && (change.kind === "remove" || change.role !== "owner");
  if (stopsOwning && owners.length <= 1) throw lastOwner(userId);
  // Anyone may leave (with members:write); the last owner was stopped above.
  if (actor === null || (change.kind === "remove" && actor.userId === userId)) return role;
  const actorRole = actor.userId === userId ? role : (await r.member(orgId, actor.userId))?.role;
  if (!isManager(actorRole)) {
    throw new AppError("insufficient_scope", `Changing a member requires an owner or admin membership; the calling user is ${who(actorRole)}.`);
  }
  if (actorRole !== "owner" && (role === "owner" || (change.kind === "role" && change.role === "owner"))) {
    throw new AppError("insufficient_scope", "Only an owner makes a member an owner, or changes or removes an owner; the calling user is an admin.");
  }
  return role;
}

export function membersSystem(res: KeysResources, mint: MintKey) {
  const { repo } = res;

  const opened = ({ token_sealed, ...shown }: RecordedInvitation): CreatedInvitation => ({ ...shown, token: res.box.open(token_sealed) });

  async function changeRole(orgId: string, actor: Actor, userId: string, role: Role, by: By): Promise<Member> {
    const { before, member } = await res.tx(async (r) => {
      const was = await checkChange(r, orgId, actor, userId, { kind: "role", role });
      if (was !== role) {
        await r.setRole(orgId, userId, role);
        await r.audit.write({
          organizationId: orgId,
          action: "member.role_changed",
          ...by,
          target: { type: "member", id: userId },
          changes: { role: { from: was, to: role } },
        });
      }
      return { before: was, member: await r.member(orgId, userId) };
    });
    if (!member) throw notMember(userId);
    if (before !== role) res.written();
    // A demotion must reach the gateways' cached identities on their next request.
    if (before !== role) await res.invalidate(orgId);
    return member;
  }

  async function remove(orgId: string, actor: Actor, userId: string, by: By): Promise<number> {
    const out = await res.tx(async (r) => {
      const was = await checkChange(r, orgId, actor, userId, { kind: "remove" });
      const gone = await r.removeMembership(orgId, userId);
      if (gone.removed) {
        await r.audit.write({
          organizationId: orgId,
          action: "member.removed",
          ...by,
          target: { type: "member", id: userId },
          changes: { role: { from: was, to: null } },
        });
      }
      return gone;
    });
    if (!out.removed) throw notMember(userId);
    res.written();
    // Their keys are gone and their tokens no longer resolve; cached identities must go too.
    await res.invalidate(orgId);
    return out.revokedKeys;
  }

  async function requireManager(r: KeysRepo, t: Caller, what: string): Promise<Role> {
    const role = (await r.member(t.organizationId, t.userId))?.role;
    if (!isManager(role)) throw new AppError("insufficient_scope", `${what} requires an owner or admin membership; the calling user is ${who(role)}.`);
    return role as Role;
  }

  return {
    async getMember(t: Caller, userId: string): Promise<Member> {
      const member = await repo.member(t.organizationId, userId);
      if (!member) throw notMember(userId);
      return member;
    },

    updateMember: (t: Caller, userId: string, role: Role) => changeRole(t.organizationId, { userId: t.userId }, userId, role, t),

    async deleteMember(t: Caller, userId: string): Promise<{ user_id: string }> {
      await remove(t.organizationId, { userId: t.userId }, userId, t);
      return { user_id: userId };
    },

    async setRole(a: { org: string; user: string; role: Role }, ctx: RpcContext) {
      const member = await changeRole(a.org, null, a.user, a.role, { actor: actorOf(ctx), ctx });
      return { user_id: member.user_id, role: member.role };
    },

    async removeMember(a: { org: string; user: string }, ctx: RpcContext) {
      const revoked = await remove(a.org, null, a.user, { actor: actorOf(ctx), ctx });
      return { organization_id: a.org, user_id: a.user, revoked_keys: revoked };
    },

    async createInvitation(t: Caller, body: CreateInvitationBody): Promise<CreatedInvitation> {
      const orgId = t.organizationId;
      const recorded = await idempotentWrite<KeysRepo, undefined, RecordedInvitation>({
        records: repo.idempotency,
        tx: res.tx,
        credentialId: t.credentialId,
        key: t.idempotencyKey,
        operation: "createInvitation",
        work: async (r) => {
          const role = await requireManager(r, t, "Inviting");
          if (body.role === "owner" && role !== "owner") {
            throw new AppError("insufficient_scope", "Only an owner invites an owner; the calling user is an admin.");
          }
          if (await r.memberByEmail(orgId, body.email)) throw new AppError("already_member", `${body.email} is already a member of this organization.`);
          const pending = await r.lockPendingInvitations(orgId);
          if (pending >= MAX_PENDING_INVITATIONS)
            throw new AppError(
              "limit_reached",
              `This organization already has ${pending} pending invitations, the most it may have: revoke one (DELETE /v1/invitations/{id}) or wait for one to be accepted or to expire.`,
            );
          const token = mintInvitationToken();
          const createdAt = new Date();
          const expiresAt = new Date(createdAt.getTime() + INVITATION_TTL_DAYS * DAY_MS);
          const id = newId("inv");
          await r.insertInvitation({
            id,
            organizationId: orgId,
            email: body.email,
            role: body.role,
            tokenHash: hashKey(token),
            invitedBy: t.userId,
            expiresAt,
            createdAt,
          });
          await r.audit.write({
            organizationId: orgId,
            action: "invitation.created",
            actor: t.actor,
            ctx: t.ctx,
            target: { type: "invitation", id },
            changes: { email: { from: null, to: body.email }, role: { from: null, to: body.role } },
          });
          return {
            id,
            email: body.email,
            role: body.role,
            status: "pending",
            expires_at: expiresAt.toISOString(),
            created_at: createdAt.toISOString(),
            token_sealed: res.box.seal(token),
          };
        },
      });
      res.written();
      return opened(recorded);
    },

    listInvitations: (t: Caller, limit: number, after: string | undefined): Promise<Page<Invitation>> => repo.listInvitations(t.organizationId, limit, after),

    async revokeInvitation(t: Caller, id: string): Promise<Invitation> {
      const out = await res.tx(async (r) => {
        const found = await r.invitation(t.organizationId, id);
        if (!found) throw new AppError("resource_not_found", `No invitation with id ${id} exists.`);
        await requireManager(r, t, "Revoking an invitation");
        const after = (await r.revokeInvitation(t.organizationId, id)) ? await r.invitation(t.organizationId, id) : undefined;
        // Only the revocation that changed it is recorded: revoking twice, or an accepted one, changes nothing.
        if (after) {
          await r.audit.write({
            organizationId: t.organizationId,
            action: "invitation.revoked",
            actor: t.actor,
            ctx: t.ctx,
            target: { type: "invitation", id },
            changes: { status: { from: found.status, to: after.status } },
          });
        }
        return after ?? found;
      });
      res.written();
      return out;
    },

    /** Every refusal of the token is the same 404, so the answer says nothing about which tokens exist or existed. */
    async acceptInvitation(body: AcceptInvitationBody, ctx: RpcContext): Promise<AcceptedInvitation> {
      const out = await res.tx(async (r) => {
        const inv = await r.claimInvitation(hashKey(body.token));
        if (!inv) throw new AppError("resource_not_found", "No pending invitation has this token: it is unknown, used, revoked or expired.");
        const userId = await r.upsertUser(newId("usr"), inv.email);
        // Rolled back with the claim: the invitation stays pending.
        if (!(await r.insertMembership(inv.organization_id, userId, inv.role))) {
          throw new AppError("already_member", "The invited email address is already a member of the organization.");
        }
        await r.recordAcceptedBy(inv.id, userId);
        // The invitation's token is the credential: the one who accepts acts as the member they become.
        const by: By = { actor: { type: "user", id: userId, user_id: userId }, ctx };
        const orgId = inv.organization_id;
        await r.audit.write(
          {
            organizationId: orgId,
            action: "invitation.accepted",
            ...by,
            target: { type: "invitation", id: inv.id },
            changes: { status: { from: "pending", to: "accepted" } },
          },
          { organizationId: orgId, action: "member.added", ...by, target: { type: "member", id: userId }, changes: { role: { from: null, to: inv.role } } },
        );
        const apiKey = await mint(r, { orgId, userId, name: body.key_name, scopes: DEFAULT_KEY_SCOPES }, by);
        return { organization_id: orgId, user_id: userId, api_key: apiKey };
      });
      res.written();
      return out;
    },
  };
}
