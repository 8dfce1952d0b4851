import { z } from "zod";
import { Identity, Scope } from "./auth.js";
import { CreatedAt, Label, OpaqueId, PageQuery, Timestamp, page } from "./common.js";
import { StoredName } from "./members.js";

/** Every live client can mint tokens, so an organization holds a bounded number, as with API keys. */
export const MAX_LIVE_OAUTH_CLIENTS = 100;

/** Our own access tokens live this long; a client asks for a new one when it expires (RFC 6749 4.4 has no refresh token). */
export const OAUTH_TOKEN_TTL_SECONDS = 3600;

const CLIENT_ID = "oac_6hT2nQ8rW4mK9pL3vB7sX1";
const PUBLIC_CLIENT_ID = "cli_3pR7kW2mQ9xT5nL8vB4dS6";
const SCOPES_DOC = {
  description: "What the client's tokens may do: one or more scopes; a token asks for some of them or gets all.",
  examples: [["tasks:read", "tasks:write"]],
};

export const OAuthClient = z.object({
  id: z.string().meta({ description: "The client's id: use it to read or delete the client.", examples: [CLIENT_ID] }),
  name: z.string().meta({ description: "What the client is for, as its creator named it.", examples: ["Nightly sync"] }),
  client_id: z.string().meta({
    description: "The OAuth client identifier: send it with the secret to the token endpoint (HTTP Basic or the form's `client_id`).",
    examples: [PUBLIC_CLIENT_ID],
  }),
  scopes: z.array(Scope).meta(SCOPES_DOC),
  created_by: z.string().meta({
    description: "The member who created the client: its tokens act as this member, with their current role, and stop when they leave.",
    examples: ["usr_7hQ2mD9xK3pL5nB8vR4tW1"],
  }),
  created_at: CreatedAt,
});
export type OAuthClient = z.infer<typeof OAuthClient>;

export const CreatedOAuthClient = OAuthClient.extend({
  client_secret: z.string().meta({
    description: "The client secret: shown only in this answer (and to a retry with the same Idempotency-Key), store it now.",
    examples: ["oacs_8Wq2Lm4Xr7Tn1Kp9Vb3Zs6Hd5Jf0Gc2Ya8Ue4Io7Pk1"],
  }),
});
export type CreatedOAuthClient = z.infer<typeof CreatedOAuthClient>;

export const CreateOAuthClientBody = z.strictObject({
  name: StoredName.min(1)
    .max(200)
    .meta({ description: "What the client is for.", examples: ["Nightly sync"] }),
  scopes: z.array(Scope).min(1).max(50).meta(SCOPES_DOC),
});
export type CreateOAuthClientBody = z.infer<typeof CreateOAuthClientBody>;

export const OAuthClientIdParams = z.object({ oauth_client_id: OpaqueId.meta({ description: "The OAuth client's id (`oac_…`).", examples: [CLIENT_ID] }) });

export const DeletedOAuthClient = z.object({
  id: z.string().meta({ description: "The deleted client's id: its tokens no longer work.", examples: [CLIENT_ID] }),
});

/** What the token endpoint needs to know of a client whose secret checked out. */
export const AuthenticatedClient = z.object({
  id: z.string(),
  client_id: z.string(),
  organization_id: z.string(),
  user_id: z.string(),
  scopes: z.array(Scope),
});
export type AuthenticatedClient = z.infer<typeof AuthenticatedClient>;

const SHA256_HEX = z.string().regex(/^[0-9a-f]{64}$/);

export const oauthClientOps = {
  createOAuthClient: { input: CreateOAuthClientBody, output: CreatedOAuthClient },
  listOAuthClients: { input: PageQuery, output: page(OAuthClient) },
  getOAuthClient: { input: OAuthClientIdParams, output: OAuthClient },
  deleteOAuthClient: { input: OAuthClientIdParams, output: DeletedOAuthClient },
  /** The secret is hashed by the gateway, so it never crosses NATS; null for an unknown pair or a client whose creator left. */
  authenticateClient: { input: z.object({ client_id: Label.min(1).max(100), secret_hash: SHA256_HEX }), output: AuthenticatedClient.nullable() },
  /** Claims of one of our verified tokens: null when its client is gone, it was revoked, or its creator is no member. */
  resolveClientToken: {
    input: z.object({
      client_id: Label.min(1).max(100),
      organization_id: Label,
      user_id: Label,
      jti: Label.min(1).max(100),
      scopes: z.array(Scope),
      expires_at: Timestamp,
    }),
    output: Identity.nullable(),
  },
  /** Kept until the token's own expiry. */
  revokeClientToken: {
    input: z.object({ client_id: Label.min(1).max(100), organization_id: Label, jti: Label.min(1).max(100), expires_at: Timestamp }),
    output: z.object({ revoked: z.boolean() }),
  },
} as const;
