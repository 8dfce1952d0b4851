import { AcceptedInvitation, AcceptInvitationBody, type ErrorCode } from "@tasksvc/contracts";
import { type Json, schemaOf } from "./schemas.js";

// The invitation's accept is served by the HTTP edge (it takes no credential), so it is documented
// here beside the other routes that are not operations, from the same contracts that validate it.

export const ACCEPT_SCHEMAS: Record<string, Json> = {
  AcceptInvitationRequest: schemaOf(AcceptInvitationBody, "input"),
  AcceptedInvitation: schemaOf(AcceptedInvitation, "output"),
};

/** The plain routes' helpers (declared here too: that module imports this one). */
interface Helpers {
  problem(codes: ErrorCode[], extraHeaders?: Json): Json;
  header(description: string, schema?: Json): Json;
  requestId: Json;
  methodNotAllowed: Json;
}

/** Sendable only with a real token, which an invitation's creation answers once. */
export const ACCEPT_EXAMPLE = {
  name: "withTheToken",
  summary: "With the token an invitation's creation answered",
  description:
    "Not sendable as is: `token` must come from a pending invitation (POST /v1/invitations answers it once, to the one who invites). Put that token here.",
} as const;

export function acceptRoutePath(h: Helpers): Record<string, Record<string, Json>> {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const retryAfter = { "Retry-After": h.header("Seconds to wait", { type: "integer" }) };
  const example = AcceptInvitationBody.parse({ token: "invite_5Qe8TzL2wRk9mXb4NcV7pJd3sHf6Ga1Yu0Ko8Li2Mn", key_name: "Ada's laptop" });
  return {
    "/v1/invitations/accept": {
      post: {
        operationId: "acceptInvitation",
        tags: ["Invitations"],
        summary: "Accept an invitation: join the organization and get an API key",
        description:
          "No credential: the invitation's token is the authorization, and it works once. The invited email address becomes a member with the invitation's role (a new user, or an existing one joining), and gets a new API key with the default scopes, shown only in this answer. An unknown, used, revoked or expired token is the same 404. Limited per client address (10 a minute by default).",
        security: [],
        requestBody: {
          required: true,
          content: {
            "application/json": {
              schema: ref("AcceptInvitationRequest"),
              examples: { [ACCEPT_EXAMPLE.name]: { summary: ACCEPT_EXAMPLE.summary, description: ACCEPT_EXAMPLE.description, value: example } },
            },
          },
        },
        responses: {
          "201": {
            description: "Joined: the new member's API key",
            headers: { "x-request-id": h.requestId },
            content: { "application/json": { schema: ref("AcceptedInvitation") } },
          },
          "400": h.problem(["validation_failed"]),
          "404": h.problem(["resource_not_found"]),
          "405": h.methodNotAllowed,
          "409": h.problem(["already_member", "limit_reached"]),
          "413": h.problem(["payload_too_large"]),
          "415": h.problem(["unsupported_media_type"]),
          "429": h.problem(["rate_limited"], retryAfter),
          "500": h.problem(["internal_error"]),
          "503": h.problem(["service_unavailable"], retryAfter),
        },
      },
    },
  };
}
