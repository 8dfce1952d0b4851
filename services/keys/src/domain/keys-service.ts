import {
  actorOf,
  DEFAULT_KEY_SCOPES,
  MAX_LIVE_API_KEYS,
  PLAN_DEFAULTS,
  SCOPES,
  type ApiKey,
  type CreateApiKeyBody,
  type CreatedApiKey,
  type Identity,
  type Caller,
  type Limits,
  type Member,
  type Organization,
  type Page,
  type Plan,
  type Role,
  type RpcContext,
  type Scope,
} from "@tasksvc/contracts";
import { type AuditEntry, changesOf, newId, storedResult } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import { toApiKey, toOrganization, type KeysRepo, type NewKey, type OrgRow } from "../repo/keys-repo.js";
import type { DevIssuer } from "./dev-issuer.js";
import { type By, lastOwner, membersSystem } from "./members.js";
import { oauthClientsSystem } from "./oauth-clients.js";
import type { KeysResources } from "./resources.js";
import { mintsTogether } from "./mints-together.js";
import { type LimitOverrides, OVERRIDABLE } from "../repo/org-row.js";
import { effectiveLimits } from "./limits.js";
import { hashKey, keyPrefix, mintKeySecret } from "./secrets.js";

/** The secret sealed, so no table holds a usable API key; a replay opens it again (decision 0022). */
type RecordedKey = Omit<CreatedApiKey, "key"> & { key_sealed: string };

function identity(kind: Identity["kind"], credentialId: string, org: OrgRow, userId: string, role: Role, scopes: Scope[], expiresAt: Date | null): Identity {
  return {
    kind,
    credential_id: credentialId,
    organization_id: org.id,
    organization_created_at: org.created_at.toISOString(),
    organization_name: org.name,
    user_id: userId,
    role,
    scopes,
    plan: org.plan,
    entitlements: [...PLAN_DEFAULTS[org.plan].entitlements],
    limits: effectiveLimits(org),
    expires_at: expiresAt ? expiresAt.toISOString() : null,
  };
}

const notFound = (what: string, id: string) => new AppError("resource_not_found", `No ${what} with id ${id} exists.`);

const limitReached = (orgId: string, live: number, how: string) =>
  new AppError(
    "limit_reached",
    `Organization ${orgId} already has ${live} live API keys, the most it may hold is ${MAX_LIVE_API_KEYS}: revoke one (${how}) before creating another.`,
  );

export function keysService(res: KeysResources, { issuer }: { issuer: DevIssuer }) {
  const { repo } = res;

  function opened(r: RecordedKey): CreatedApiKey {
    // Records written before decision 0022 hold the secret plain (gone 24 h after the upgrade).
    if ("key" in r && typeof r.key === "string") return r as CreatedApiKey;
    const { key_sealed, ...shown } = r;
    return { ...shown, key: res.box.open(key_sealed) };
  }

  async function orgOrThrow(orgId: string): Promise<OrgRow> {
    const org = await repo.organization(orgId);
    if (!org) throw notFound("organization", orgId);
    return org;
  }

  type KeySpec = { orgId: string; userId: string; name: string | null; scopes: readonly Scope[]; kind: "live" | "test" | "legacy"; expiresAt: Date | null };

  function newKey(a: KeySpec): { key: NewKey; secret: string } {
    const secret = mintKeySecret(a.kind);
    const key: NewKey = {
      id: newId("key"),
      organizationId: a.orgId,
      userId: a.userId,
      name: a.name,
      keyHash: hashKey(secret),
      keyPrefix: keyPrefix(secret),
      scopes: a.scopes,
      legacy: a.kind === "legacy",
      testMode: a.kind === "test",
      expiresAt: a.expiresAt,
    };
    return { key, secret };
  }

  /** Within the organization's limit of live keys, like POST /v1/api-keys. `r` must be a transaction's repo: the lock holds until it ends. */
  async function mintKey(r: KeysRepo, a: KeySpec, by: By): Promise<CreatedApiKey> {
    await r.lockOrganizationKeys(a.orgId);
    const live = await r.liveKeyCount(a.orgId);
    if (live >= MAX_LIVE_API_KEYS) throw limitReached(a.orgId, live, "list-keys and revoke-key");
    const { key, secret } = newKey(a);
    await auditKeyCreated(r, key, by);
    return { ...toApiKey(await r.insertKey(key)), key: secret };
  }

  /** What the key may do, never what it is: neither the secret nor its hash or prefix. */
  function keyCreated(key: NewKey, by: By): AuditEntry {
    const created = { name: key.name, scopes: [...key.scopes], expires_at: key.expiresAt?.toISOString() ?? null, test_mode: key.testMode, legacy: key.legacy };
    const none = { name: null, scopes: null, expires_at: null, test_mode: null, legacy: null };
    return {
      organizationId: key.organizationId,
      action: "api_key.created",
      ...by,
      target: { type: "api_key", id: key.id },
      changes: changesOf<Record<string, unknown>>(none, created, ["name", "scopes", "expires_at", "test_mode", "legacy"]),
    };
  }

  function auditKeyCreated(r: KeysRepo, key: NewKey, by: By): Promise<void> {
    return r.audit.write(keyCreated(key, by));
  }

  const system = (ctx: RpcContext): By => ({ actor: actorOf(ctx), ctx });

  const mintTogether = mintsTogether(res);

  const members = membersSystem(res, async (r, a, by) => (await mintKey(r, { ...a, kind: "live", expiresAt: null }, by)).key);

  return {
    ...members,
    ...oauthClientsSystem(res),

    async authenticateKey(keyHash: string): Promise<Identity | null> {
      const row = await repo.identityByKeyHash(keyHash);
      if (!row) return null;
      // last_used_at is best effort and coalesced; never fail or slow an authentication for it.
      repo.touchKey(row.key_id).catch(() => {});
      return identity("api_key", row.key_id, row, row.user_id, row.role, row.scopes, row.expires_at);
    },

    async resolveMember(a: { organization_id: string; user_id: string; credential_id: string; scopes: Scope[]; expires_at: string }): Promise<Identity | null> {
      const m = await repo.membership(a.organization_id, a.user_id);
      if (!m) return null;
      return identity("access_token", a.credential_id, m.org, a.user_id, m.role, a.scopes, new Date(a.expires_at));
    },

    /** Effective scopes are the token's within the client's now: narrowing a client narrows its live tokens. */
    async resolveClientToken(a: {
      client_id: string;
      organization_id: string;
      user_id: string;
      jti: string;
      scopes: Scope[];
      expires_at: string;
    }): Promise<Identity | null> {
      const row = await repo.clientToken({ clientId: a.client_id, orgId: a.organization_id, userId: a.user_id, jti: a.jti });
      if (!row) return null;
      const scopes = a.scopes.filter((s) => row.client_scopes.includes(s));
      return { ...identity("access_token", row.client_key, row, a.user_id, row.role, scopes, new Date(a.expires_at)), client_id: row.client_key };
    },

    async currentMembers(orgId: string, userIds: string[]): Promise<{ user_ids: string[] }> {
      return { user_ids: userIds.length === 0 ? [] : await repo.currentMembers(orgId, [...new Set(userIds)]) };
    },

    async userEmails(userIds: string[]): Promise<{ users: Array<{ id: string; email: string }> }> {
      return { users: userIds.length === 0 ? [] : await repo.userEmails([...new Set(userIds)]) };
    },

    async membersByEmail(orgId: string, emails: string[]): Promise<{ members: Array<{ email: string; user_id: string }> }> {
      return { members: emails.length === 0 ? [] : await repo.membersByEmail(orgId, [...new Set(emails.map((e) => e.toLowerCase()))]) };
    },

    async listOrganizations(t: Caller): Promise<Page<Organization>> {
      const org = await orgOrThrow(t.organizationId);
      return { data: [toOrganization(org)], has_more: false, next_cursor: null };
    },

    async getOrganization(t: Caller, orgId: string): Promise<Organization> {
      if (orgId !== t.organizationId) throw notFound("organization", orgId);
      return toOrganization(await orgOrThrow(orgId));
    },

    listMembers(t: Caller, limit: number, after: string | undefined): Promise<Page<Member>> {
      return repo.listMembers(t.organizationId, limit, after);
    },

    async createApiKey(t: Caller, body: CreateApiKeyBody): Promise<CreatedApiKey> {
      // The key is recorded in the minting statement, so a retry after a crash anywhere before the
      // gateway's own record gets the same key back instead of a second one (decisions 0020, 0022).
      const { credentialId, idempotencyKey: idemKey } = t;
      const expiresAt = body.expires_in_days === undefined ? null : new Date(Date.now() + body.expires_in_days * 86_400_000);
      const { key: row, secret } = newKey({
        orgId: t.organizationId,
        userId: t.userId,
        name: body.name,
        scopes: [...new Set(body.scopes ?? DEFAULT_KEY_SCOPES)],
        kind: body.test_mode ? "test" : "live",
        expiresAt,
      });
      const key = { ...row, createdAt: new Date() };
      const shown = toApiKey({
        id: key.id,
        name: key.name,
        key_prefix: key.keyPrefix,
        scopes: [...key.scopes],
        last_used_at: null,
        expires_at: key.expiresAt,
        created_at: key.createdAt,
        legacy: key.legacy,
      });
      const once = idemKey === undefined ? null : { credentialId, key: idemKey, result: { ...shown, key_sealed: res.box.seal(secret) } satisfies RecordedKey };
      const out = await mintTogether(t.organizationId, { key, once, created: keyCreated(key, t) });
      switch (out.kind) {
        case "minted":
          res.written();
          return { ...shown, key: secret };
        case "replay":
          return opened(storedResult<RecordedKey>(out, "createApiKey"));
        case "forbidden":
          // The caller's user must be owner or admin now, whatever the key's scopes say.
          throw new AppError(
            "insufficient_scope",
            `Minting API keys requires an owner or admin membership; the calling user is ${out.role ? `a ${out.role}` : "not a member"}.`,
          );
        case "limitReached":
          throw limitReached(t.organizationId, out.live, "DELETE /v1/api-keys/{key_id}");
        case "recordedMeanwhile": {
          // A twin recorded the key first (the statement waited for its commit): its key is the answer.
          const stored = await repo.idempotency.replay<RecordedKey>(credentialId, idemKey, "createApiKey");
          if (stored) return opened(stored);
          throw new AppError("internal_error", "The Idempotency-Key was recorded but its result could not be read back.");
        }
      }
    },

    listApiKeys(t: Caller, limit: number, after: string | undefined): Promise<Page<ApiKey>> {
      return repo.listKeys(t.organizationId, limit, after);
    },

    async revokeApiKey(t: Caller, keyId: string): Promise<{ id: string; legacy: boolean }> {
      const key = await res.tx(async (r) => {
        const live = await r.liveKey(t.organizationId, keyId);
        if (!live) return undefined;
        // Legacy rows are kept for audit; of two concurrent revokes, the one that changed nothing is a 404.
        if (!(live.legacy ? await r.softRevokeKey(live.id) : await r.deleteKey(live.id))) return undefined;
        await r.audit.write({
          organizationId: t.organizationId,
          action: "api_key.revoked",
          actor: t.actor,
          ctx: t.ctx,
          target: { type: "api_key", id: live.id },
        });
        return live;
      });
      if (!key) throw notFound("API key", keyId);
      res.written();
      await res.invalidate(t.organizationId);
      return { id: key.id, legacy: key.legacy };
    },

    async devJwks() {
      return { issuer: issuer.issuer, keys: (await issuer.publicJwks()) as Record<string, unknown>[] };
    },

    async bootstrap(a: { org: string; plan: Plan; email: string; if_exists?: "refuse" | "reuse" | undefined }, ctx: RpcContext) {
      const by = system(ctx);
      const out = await res.tx(async (r) => {
        if (a.if_exists) {
          // Two CI jobs bootstrapping the same organization at once: the second sees the first's.
          await r.lockBootstrap(a.org, a.email);
          const found = await r.bootstrapped(a.org, a.email);
          if (found && a.if_exists === "refuse") {
            throw new AppError("validation_failed", `Organization "${a.org}" (${found.organization_id}) already exists with owner ${a.email}.`, {
              errors: [{ pointer: "/if_exists", message: 'use "reuse" to get a fresh owner key for it' }],
            });
          }
          if (found) {
            const { organization_id, user_id } = found;
            const key = await mintKey(r, { orgId: organization_id, userId: user_id, name: "bootstrap", scopes: SCOPES, kind: "live", expiresAt: null }, by);
            return { organization_id, user_id, api_key: key.key };
          }
        }
        const orgId = newId("org");
        await r.insertOrganization(orgId, a.org, a.plan);
        const userId = await r.upsertUser(newId("usr"), a.email);
        await r.upsertMembership(orgId, userId, "owner");
        await r.audit.write({
          organizationId: orgId,
          action: "member.added",
          ...by,
          target: { type: "member", id: userId },
          changes: { role: { from: null, to: "owner" } },
        });
        const key = await mintKey(r, { orgId, userId, name: "bootstrap", scopes: SCOPES, kind: "live", expiresAt: null }, by);
        return { organization_id: orgId, user_id: userId, api_key: key.key };
      });
      res.written();
      return out;
    },

    async addUser(a: { org: string; email: string; role: Role }, ctx: RpcContext) {
      await orgOrThrow(a.org);
      const by = system(ctx);
      const out = await res.tx(async (r) => {
        const userId = await r.upsertUser(newId("usr"), a.email);
        // Adding an existing member sets their role: the last owner keeps theirs.
        const owners = await r.lockOwners(a.org);
        if (a.role !== "owner" && owners.length === 1 && owners[0] === userId) throw lastOwner(userId);
        const was = await r.lockMember(a.org, userId);
        await r.upsertMembership(a.org, userId, a.role);
        const target = { type: "member", id: userId } as const;
        if (was === undefined)
          await r.audit.write({ organizationId: a.org, action: "member.added", ...by, target, changes: { role: { from: null, to: a.role } } });
        else if (was !== a.role)
          await r.audit.write({ organizationId: a.org, action: "member.role_changed", ...by, target, changes: { role: { from: was, to: a.role } } });
        const key = await mintKey(r, { orgId: a.org, userId, name: a.email, scopes: DEFAULT_KEY_SCOPES, kind: "live", expiresAt: null }, by);
        return { user_id: userId, api_key: key.key };
      });
      res.written();
      await res.invalidate(a.org);
      return out;
    },

    async setPlan(a: { org: string; plan: Plan }, ctx: RpcContext) {
      const changed = await res.tx(async (r) => {
        const before = await r.lockOrganization(a.org);
        if (!before) throw notFound("organization", a.org);
        if (before.plan === a.plan) return false;
        await r.setPlan(a.org, a.plan);
        const target = { type: "organization", id: a.org } as const;
        await r.audit.write({
          organizationId: a.org,
          action: "organization.plan_changed",
          ...system(ctx),
          target,
          changes: { plan: { from: before.plan, to: a.plan } },
        });
        return true;
      });
      if (changed) res.written();
      await res.invalidate(a.org);
      return { organization_id: a.org, plan: a.plan };
    },

    /** The change is recorded as the effective limits before and after, so a client need not know the plans' defaults. */
    async setLimits(a: { org: string } & LimitOverrides, ctx: RpcContext) {
      const { org, changed } = await res.tx(async (r) => {
        const before = await r.lockOrganization(a.org);
        if (!before) throw notFound("organization", a.org);
        const after = await r.setLimits(a.org, a);
        if (!after) throw notFound("organization", a.org);
        const changes = changesOf<Limits>(effectiveLimits(before), effectiveLimits(after), OVERRIDABLE);
        const target = { type: "organization", id: a.org } as const;
        const any = Object.keys(changes).length > 0;
        if (any) await r.audit.write({ organizationId: a.org, action: "organization.limits_changed", ...system(ctx), target, changes });
        return { org: after, changed: any };
      });
      if (changed) res.written();
      await res.invalidate(a.org);
      return { organization_id: org.id, plan: org.plan, limits: effectiveLimits(org) };
    },

    async legacyKey(a: { org: string; user: string }, ctx: RpcContext) {
      const m = await repo.membership(a.org, a.user);
      if (!m) throw new AppError("resource_not_found", `User ${a.user} is not a member of organization ${a.org}.`);
      const spec: KeySpec = { orgId: a.org, userId: a.user, name: null, scopes: DEFAULT_KEY_SCOPES, kind: "legacy", expiresAt: null };
      const key = await res.tx((r) => mintKey(r, spec, system(ctx)));
      res.written();
      return { id: key.id, api_key: key.key };
    },

    async issueToken(a: { org: string; user: string; scopes: Scope[]; ttl: number }) {
      const m = await repo.membership(a.org, a.user);
      if (!m) throw new AppError("resource_not_found", `User ${a.user} is not a member of organization ${a.org}.`);
      const { token, expiresAt } = await issuer.sign({ sub: a.user, org_id: a.org, scope: a.scopes.join(" "), jti: newId("tok") }, a.ttl);
      return { access_token: token, expires_at: expiresAt.toISOString() };
    },
  };
}
export type KeysService = ReturnType<typeof keysService>;
