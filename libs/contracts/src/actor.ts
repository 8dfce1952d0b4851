import { z } from "zod";
import type { Identity } from "./auth.js";

/**
 * Who made a change: the credential behind it. `system` is the admin CLI and the service's own
 * schedulers; `rewind` is an undo, named by its rewind id.
 */
export const ActorType = z.enum(["user", "api_key", "oauth_client", "system", "rewind"]);
export type ActorType = z.infer<typeof ActorType>;

export const Actor = z
  .object({
    type: ActorType.meta({
      description:
        "What kind of credential acted: `api_key`, `oauth_client` (a token of one of the organization's OAuth clients), `user` (an access token of another issuer), `system` (an administrator's command or the service itself) or `rewind` (an undo).",
      examples: ["api_key"],
    }),
    id: z.string().meta({
      description: "The credential's id: the API key's, the OAuth client's, the user's for a user token, the rewind's; `system` for the service.",
      examples: ["key_2bN8xQ4mT7pL1vD9kR3sW6"],
    }),
    user_id: z
      .string()
      .nullable()
      .meta({ description: "The member the credential acts as; null for the system.", examples: ["usr_7hQ2mD9xK3pL5nB8vR4tW1"] }),
  })
  .meta({ description: "Who made the change: which credential, acting as which member." });
export type Actor = z.infer<typeof Actor>;

/** The admin CLI's context names itself this way (its calls run with the trust of NATS). */
export const ADMIN_CLI_CREDENTIAL = "admin-cli";

export const SYSTEM_ACTOR: Actor = { type: "system", id: "system", user_id: null };

/** A key acts as itself, a token of our own OAuth client as that client, any other access token as its user. */
export function identityActor(identity: Pick<Identity, "kind" | "credential_id" | "user_id" | "client_id">): Actor {
  if (identity.kind === "api_key") return { type: "api_key", id: identity.credential_id, user_id: identity.user_id };
  if (identity.client_id) return { type: "oauth_client", id: identity.client_id, user_id: identity.user_id };
  return { type: "user", id: identity.user_id, user_id: identity.user_id };
}
