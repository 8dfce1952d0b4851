import {
  MAX_LIVE_OAUTH_CLIENTS,
  type AuthenticatedClient,
  type Caller,
  type CreatedOAuthClient,
  type CreateOAuthClientBody,
  type OAuthClient,
  type Page,
  type Role,
} from "@tasksvc/contracts";
import { changesOf, idempotentWrite, newId } from "@tasksvc/db";
import { AppError } from "@tasksvc/errors";
import type { KeysRepo } from "../repo/keys-repo.js";
import type { KeysResources } from "./resources.js";
import { hashKey, mintClientId, mintClientSecret } from "./secrets.js";

/** The secret sealed, so no table holds a usable one; a replay opens it again (decision 0022). */
type RecordedClient = Omit<CreatedOAuthClient, "client_secret"> & { client_secret_sealed: string };

const notFound = (id: string) => new AppError("resource_not_found", `No OAuth client with id ${id} exists.`);

/**
 * An organization's OAuth clients. Creating and deleting each run in one transaction of one
 * function here, so that what must commit with them (an audit event) has one place to go.
 */
export function oauthClientsSystem(res: KeysResources) {
  const { repo } = res;

  const opened = ({ client_secret_sealed, ...shown }: RecordedClient): CreatedOAuthClient => ({ ...shown, client_secret: res.box.open(client_secret_sealed) });

  /** The caller's user must be owner or admin now, whatever the credential's scopes say. */
  async function requireManager(r: KeysRepo, t: Caller, what: string): Promise<Role> {
    const role = (await r.member(t.organizationId, t.userId))?.role;
    if (role !== "owner" && role !== "admin") {
      throw new AppError("insufficient_scope", `${what} requires an owner or admin membership; the calling user is ${role ? `a ${role}` : "not a member"}.`);
    }
    return role;
  }

  return {
    async createOAuthClient(t: Caller, body: CreateOAuthClientBody): Promise<CreatedOAuthClient> {
      const recorded = await idempotentWrite<KeysRepo, undefined, RecordedClient>({
        records: repo.idempotency,
        tx: res.tx,
        credentialId: t.credentialId,
        key: t.idempotencyKey,
        operation: "createOAuthClient",
        work: async (r) => {
          await requireManager(r, t, "Creating an OAuth client");
          // Concurrent creates queue on the organization's lock, each counting what the previous one committed.
          await r.lockOrganizationClients(t.organizationId);
          const live = await r.clientCount(t.organizationId);
          if (live >= MAX_LIVE_OAUTH_CLIENTS) {
            throw new AppError(
              "limit_reached",
              `This organization already has ${live} OAuth clients, the most it may hold is ${MAX_LIVE_OAUTH_CLIENTS}: delete one (DELETE /v1/oauth-clients/{id}) before creating another.`,
            );
          }
          const secret = mintClientSecret();
          const client = {
            id: newId("oac"),
            organizationId: t.organizationId,
            name: body.name,
            clientId: mintClientId(),
            secretHash: hashKey(secret),
            scopes: [...new Set(body.scopes)],
            createdBy: t.userId,
            createdAt: new Date(),
          };
          await r.insertClient(client);
          // What the client may do, never its secret or the secret's hash.
          await r.audit.write({
            organizationId: t.organizationId,
            action: "oauth_client.created",
            actor: t.actor,
            ctx: t.ctx,
            target: { type: "oauth_client", id: client.id },
            changes: changesOf<Record<string, unknown>>({ name: null, scopes: null }, { name: client.name, scopes: client.scopes }, ["name", "scopes"]),
          });
          return {
            id: client.id,
            name: client.name,
            client_id: client.clientId,
            scopes: client.scopes,
            created_by: client.createdBy,
            created_at: client.createdAt.toISOString(),
            client_secret_sealed: res.box.seal(secret),
          };
        },
      });
      return opened(recorded);
    },

    listOAuthClients: (t: Caller, limit: number, after: string | undefined): Promise<Page<OAuthClient>> => repo.listClients(t.organizationId, limit, after),

    async getOAuthClient(t: Caller, id: string): Promise<OAuthClient> {
      const client = await repo.client(t.organizationId, id);
      if (!client) throw notFound(id);
      return client;
    },

    async deleteOAuthClient(t: Caller, id: string): Promise<{ id: string }> {
      await res.tx(async (r) => {
        if (!(await r.client(t.organizationId, id))) throw notFound(id);
        await requireManager(r, t, "Deleting an OAuth client");
        if (!(await r.deleteClient(t.organizationId, id))) throw notFound(id);
        await r.audit.write({
          organizationId: t.organizationId,
          action: "oauth_client.deleted",
          actor: t.actor,
          ctx: t.ctx,
          target: { type: "oauth_client", id },
        });
      });
      // Its tokens are cached as identities on every gateway: they must stop on the next request.
      await res.invalidate(t.organizationId);
      return { id };
    },

    async authenticateClient(clientId: string, secretHash: string): Promise<AuthenticatedClient | null> {
      return (await repo.clientBySecret(clientId, secretHash)) ?? null;
    },

    async revokeClientToken(a: { client_id: string; organization_id: string; jti: string; expires_at: string }): Promise<{ revoked: boolean }> {
      const revoked = await repo.revokeToken({ clientId: a.client_id, orgId: a.organization_id, jti: a.jti, expiresAt: new Date(a.expires_at) });
      // Also when it was revoked already: a gateway may still hold it from before.
      await res.invalidate(a.organization_id);
      return { revoked };
    },
  };
}
