import { OAUTH_TOKEN_TTL_SECONDS, SCOPES, type ErrorCode } from "@tasksvc/contracts";
import type { Json } from "./schemas.js";

// The authorization server of the organizations' own OAuth clients is served by the HTTP edge (it
// takes client credentials, not a bearer credential), so it is documented here beside the other
// routes that are not operations. Its errors are OAuth's own JSON (RFC 6749 5.2), not problems.

/** The plain routes' helpers (declared here too: that module imports this one). */
interface Helpers {
  problem(codes: ErrorCode[], extraHeaders?: Json): Json;
  header(description: string, schema?: Json): Json;
  requestId: Json;
  methodNotAllowed: Json;
}

export const OAUTH_TAG = {
  name: "OAuth",
  description:
    "The token endpoint for the organizations' OAuth clients (client credentials grant), token revocation and introspection, and the metadata and keys a client library discovers them by. Errors here are OAuth's `{ error, error_description }`.",
} as const;

const TOKEN = "eyJhbGciOiJFUzI1NiIsImtpZCI6InNpZ24tMjAyNi0xMSIsInR5cCI6ImF0K2p3dCJ9.eyJzdWIiOiJ1c3JfN2hRMm1EOXhLM3BMNW5COHZSNHRXMSJ9.c2lnbmF0dXJl";
const CLIENT_ID = "cli_3pR7kW2mQ9xT5nL8vB4dS6";
const SECRET = "oacs_8Wq2Lm4Xr7Tn1Kp9Vb3Zs6Hd5Jf0Gc2Ya8Ue4Io7Pk1";

const str = (description: string, example: unknown, more: Json = {}) => ({ type: "string", description, examples: [example], ...more });
const int = (description: string, example: number) => ({ type: "integer", description, examples: [example] });
const obj = (properties: Record<string, Json>, required: string[], description: string) => ({
  type: "object",
  description,
  properties,
  required,
  additionalProperties: false,
});

const clientFields = {
  client_id: str("The client's `client_id`, when it is not sent with HTTP Basic.", CLIENT_ID),
  client_secret: str("The client's secret, when it is not sent with HTTP Basic (never both ways at once).", SECRET),
};

export const OAUTH_SCHEMAS: Record<string, Json> = {
  OAuthTokenRequest: obj(
    {
      grant_type: str("Always `client_credentials`.", "client_credentials", { enum: ["client_credentials"] }),
      scope: str("Space-separated scopes, a subset of the client's; omitted: all of them.", "tasks:read"),
      ...clientFields,
    },
    ["grant_type"],
    "A form (application/x-www-form-urlencoded); each parameter at most once.",
  ),
  OAuthToken: obj(
    {
      access_token: str("The access token: send it as `Authorization: Bearer <token>`.", TOKEN),
      token_type: str("Always `Bearer`.", "Bearer", { enum: ["Bearer"] }),
      expires_in: int("Seconds the token is valid for; then ask for a new one.", OAUTH_TOKEN_TTL_SECONDS),
      scope: str("The token's scopes, space-separated.", "tasks:read"),
    },
    ["access_token", "token_type", "expires_in", "scope"],
    "A new access token (RFC 6749 5.1).",
  ),
  OAuthError: obj(
    {
      error: str("The OAuth error code (RFC 6749 5.2).", "invalid_scope", {
        enum: ["invalid_request", "invalid_client", "invalid_scope", "unsupported_grant_type"],
      }),
      error_description: str("What is wrong, for the developer.", "The client may not ask for 'tasks:write': its scopes are tasks:read."),
    },
    ["error", "error_description"],
    "An OAuth error (RFC 6749 5.2).",
  ),
  OAuthTokenParameter: obj(
    {
      token: str("The access token.", TOKEN),
      token_type_hint: str("Optional; only access tokens exist here.", "access_token"),
      ...clientFields,
    },
    ["token"],
    "A form (application/x-www-form-urlencoded) naming a token; each parameter at most once.",
  ),
  OAuthIntrospection: obj(
    {
      active: { type: "boolean", description: "Whether the token would be accepted now; every other member is present only when true.", examples: [true] },
      scope: str("Its scopes in effect: the token's, within its client's current scopes.", "tasks:read"),
      client_id: str("The `client_id` of the client it was issued to.", CLIENT_ID),
      sub: str("The member it acts as: the client's creator.", "usr_7hQ2mD9xK3pL5nB8vR4tW1"),
      org_id: str("The organization it acts in.", "org_3kTMd92jf7Qw1xYp8LmN2a"),
      token_type: str("Always `Bearer`.", "Bearer"),
      exp: int("When it expires (seconds since the epoch).", 1795426200),
      iat: int("When it was issued (seconds since the epoch).", 1795422600),
      iss: str("Its issuer: this server's.", "https://api.example.com"),
      aud: str("Its audience: this API.", "tasksvc-api"),
      jti: str("The token's own id.", "oat_5Qe8TzL2wRk9mXb4NcV7pJ"),
    },
    ["active"],
    'RFC 7662 2.2. Only `{ "active": false }` for a token that is unknown, expired, revoked, another organization\'s, of a deleted client or of a creator who left.',
  ),
  OAuthServerMetadata: {
    type: "object",
    description: "RFC 8414 authorization server metadata.",
    additionalProperties: true,
    properties: {
      issuer: str("The `iss` of this server's tokens.", "https://api.example.com"),
      token_endpoint: str("Where to get tokens.", "https://api.example.com/oauth/token"),
      revocation_endpoint: str("Where to revoke them (RFC 7009).", "https://api.example.com/oauth/revoke"),
      introspection_endpoint: str("Where to inspect them (RFC 7662).", "https://api.example.com/oauth/introspect"),
      jwks_uri: str("The public keys that verify them.", "https://api.example.com/.well-known/jwks.json"),
      grant_types_supported: {
        type: "array",
        items: { type: "string" },
        description: "Only the client credentials grant.",
        examples: [["client_credentials"]],
      },
      scopes_supported: { type: "array", items: { type: "string" }, description: "Every scope a client may hold.", examples: [[...SCOPES]] },
    },
    required: ["issuer", "token_endpoint", "jwks_uri", "grant_types_supported"],
  },
  JsonWebKeySet: obj(
    {
      keys: {
        type: "array",
        items: { type: "object", additionalProperties: true },
        description: "The public keys, by `kid`: the signing one and, during a rotation, the ones still verifying.",
        examples: [
          [
            {
              kty: "EC",
              crv: "P-256",
              x: "S4tTDNrpJvr3yf0_xIWcZ27VOSUdW34qB-IEB4oBOlA",
              y: "UM4WwJ5bn5fT0nT8_6sqCbWDz47oe5AtZVarLyBrP-Q",
              kid: "sign-2026-11",
              alg: "ES256",
              use: "sig",
            },
          ],
        ],
      },
    },
    ["keys"],
    "A JSON Web Key Set (RFC 7517).",
  ),
};

export function oauthRoutePaths(h: Helpers): Record<string, Record<string, Json>> {
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const retryAfter = { "Retry-After": h.header("Seconds to wait", { type: "integer" }) };
  const noStore = { "x-request-id": h.requestId, "Cache-Control": h.header("`no-store`") };
  const json = (description: string, schema: string, headers: Json = noStore) => ({
    description,
    headers,
    content: { "application/json": { schema: ref(schema) } },
  });
  // A 400 is OAuth's JSON, or a problem when the HTTP edge refused the request before it was read.
  const oauthError = (description: string, codes: ErrorCode[]) => {
    const problem = h.problem(codes) as { content: Json };
    return { description, headers: noStore, content: { "application/json": { schema: ref("OAuthError") }, ...problem.content } };
  };
  const form = (schema: string) => ({ required: true, content: { "application/x-www-form-urlencoded": { schema: ref(schema) } } });
  const refusals = {
    "405": h.methodNotAllowed,
    "413": h.problem(["payload_too_large"]),
    "429": h.problem(["rate_limited"], retryAfter),
    "500": h.problem(["internal_error"]),
    "503": h.problem(["service_unavailable"], retryAfter),
  };
  const invalidClient = {
    description: "`invalid_client`: no client credentials, an unknown client, a wrong secret, or a deleted client",
    headers: { ...noStore, "WWW-Authenticate": h.header("`Basic` when the client tried HTTP Basic") },
    content: { "application/json": { schema: ref("OAuthError") } },
  };
  const clientAuth = [{ clientBasic: [] }, {}];
  const op = (operationId: string, summary: string, description: string, more: Json) => ({
    operationId,
    tags: [OAUTH_TAG.name],
    summary,
    description,
    ...more,
  });
  const cached = { "x-request-id": h.requestId, "Cache-Control": h.header("`public, max-age=300`") };
  return {
    "/oauth/token": {
      post: op(
        "createOAuthToken",
        "Get an access token for an OAuth client (client credentials grant)",
        `No bearer credential: the client authenticates with HTTP Basic (client_id:client_secret) or with client_id and client_secret in the form, never both. The token is a JWT acting as the member who created the client, valid ${OAUTH_TOKEN_TTL_SECONDS / 60} minutes; its scopes are the ones asked for, or all of the client's.`,
        {
          security: clientAuth,
          requestBody: form("OAuthTokenRequest"),
          responses: {
            "200": json("The access token", "OAuthToken", { ...noStore, Pragma: h.header("`no-cache`") }),
            "400": oauthError("`invalid_request`, `unsupported_grant_type` or `invalid_scope`", ["malformed_request"]),
            "401": invalidClient,
            ...refusals,
          },
        },
      ),
    },
    "/oauth/revoke": {
      post: op(
        "revokeOAuthToken",
        "Revoke an access token (RFC 7009)",
        "With the client's credentials, as for a token. The token stops working on the next request, on every replica. A token that is unknown, expired, already revoked or another client's is answered 200 as well, and nothing changes.",
        {
          security: clientAuth,
          requestBody: form("OAuthTokenParameter"),
          responses: {
            "200": { description: "Revoked (or nothing to revoke)", headers: noStore },
            "400": oauthError("`invalid_request`: no token", ["malformed_request"]),
            "401": invalidClient,
            ...refusals,
          },
        },
      ),
    },
    "/oauth/introspect": {
      post: op(
        "introspectOAuthToken",
        "Inspect an access token (RFC 7662)",
        "With the credentials of any client of the same organization. Whether the token would be accepted now, and what it may do.",
        {
          security: clientAuth,
          requestBody: form("OAuthTokenParameter"),
          responses: {
            "200": json("The token's state", "OAuthIntrospection"),
            "400": oauthError("`invalid_request`: no token", ["malformed_request"]),
            "401": invalidClient,
            ...refusals,
          },
        },
      ),
    },
    "/.well-known/oauth-authorization-server": {
      get: op(
        "getOAuthServerMetadata",
        "The OAuth server's metadata (RFC 8414)",
        "No credential. Where the token, revocation and introspection endpoints and the keys are.",
        {
          security: [],
          responses: { "200": json("The metadata", "OAuthServerMetadata", cached), "405": h.methodNotAllowed, "429": refusals["429"] },
        },
      ),
    },
    "/.well-known/jwks.json": {
      get: op(
        "getOAuthKeys",
        "The public keys that verify our access tokens",
        "No credential. During a key rotation the old and the new key are both listed, so tokens signed by either verify.",
        { security: [], responses: { "200": json("The key set", "JsonWebKeySet", cached), "405": h.methodNotAllowed, "429": refusals["429"] } },
      ),
    },
  };
}
