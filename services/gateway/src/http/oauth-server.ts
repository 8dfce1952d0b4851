import { type AuthenticatedClient, SCOPES, systemContext } from "@tasksvc/contracts";
import { hashApiKey } from "@tasksvc/secrets";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Authenticator } from "../auth.js";
import type { Clients } from "../clients.js";
import { clientCredentials, grantedScopes, MAX_FORM_BYTES, OAuthError, parseForm } from "../oauth/form.js";
import type { OAuthIssuer } from "../oauth/issuer.js";

export const OAUTH_PATHS = {
  token: "/oauth/token",
  revoke: "/oauth/revoke",
  introspect: "/oauth/introspect",
  metadata: "/.well-known/oauth-authorization-server",
  jwks: "/.well-known/jwks.json",
} as const;

export interface OAuthServerOptions {
  clients: Clients;
  auth: Pick<Authenticator, "inspect">;
  issuer: OAuthIssuer;
}

const FORM = "application/x-www-form-urlencoded";
const CLIENT_ID_SHAPE = /^[\x21-\x7E]{1,100}$/;
/** RFC 6749 5.1: token answers are never cached; Pragma for HTTP/1.0 caches. */
const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };
/** Public and the same for everyone, but it changes during a key rotation: minutes, not days. */
const PUBLIC_FOR_A_WHILE = "public, max-age=300";

function sendOAuthError(reply: FastifyReply, e: OAuthError): FastifyReply {
  if (e.status === 401 && e.basicTried) reply.header("www-authenticate", 'Basic realm="tasksvc", charset="UTF-8"');
  return reply.code(e.status).headers(NO_STORE).type("application/json").send(e.body);
}

/**
 * The authorization server of our own OAuth clients (RFC 6749 4.4, 7009, 7662, 8414). These routes
 * answer errors in OAuth's own shape, not problem+json, because OAuth client libraries read that
 * shape; what OAuth has no code for (a rate limit, a body too large, an outage) stays a problem.
 * They take no bearer credential, so the anonymous routes' per-address limit counts each request.
 */
export function registerOAuthServer(app: FastifyInstance, o: OAuthServerOptions): void {
  const ctxOf = (req: FastifyRequest) => systemContext(String(req.id));
  const base = () => app.publicBaseUrl;

  async function authenticateClient(req: FastifyRequest, form: Map<string, string>): Promise<AuthenticatedClient> {
    const creds = clientCredentials(req.headers.authorization, form);
    const refused = new OAuthError("invalid_client", "The client is unknown, its secret is wrong, or it was deleted.", creds.basic);
    // No client id has other characters: such a one is refused here, never sent on as text.
    if (!CLIENT_ID_SHAPE.test(creds.clientId)) throw refused;
    // Hashed here, as API keys are: the secret never crosses NATS.
    const client = await o.clients.keys.call("authenticateClient", { client_id: creds.clientId, secret_hash: hashApiKey(creds.secret) }, ctxOf(req));
    if (!client) throw refused;
    return client;
  }

  app.register(async (scope) => {
    scope.addContentTypeParser(FORM, { parseAs: "string", bodyLimit: MAX_FORM_BYTES }, (_req, body, done) => done(null, body));
    scope.setErrorHandler((e: FastifyError | OAuthError, _req, reply) => {
      if (e instanceof OAuthError) return sendOAuthError(reply, e);
      // A body fastify could not read as a form is a malformed request in OAuth's terms; the rest
      // (too large, rate limited, unavailable) goes to the gateway's problem handling.
      if (e.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" || e.code === "FST_ERR_CTP_INVALID_JSON_BODY" || e.code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
        return sendOAuthError(reply, new OAuthError("invalid_request", `Send the parameters as a form: Content-Type: ${FORM}.`));
      }
      throw e;
    });

    scope.post(OAUTH_PATHS.token, async (req, reply) => {
      const form = parseForm(req.body);
      const grant = form.get("grant_type");
      if (grant === undefined) throw new OAuthError("invalid_request", "The grant_type parameter is missing: send grant_type=client_credentials.");
      if (grant !== "client_credentials") throw new OAuthError("unsupported_grant_type", "Only the client_credentials grant is supported.");
      const client = await authenticateClient(req, form);
      const scopes = grantedScopes(form.get("scope"), client.scopes);
      const { token, expiresIn } = await o.issuer.sign({ sub: client.user_id, org_id: client.organization_id, client_id: client.client_id, scopes });
      return reply.headers(NO_STORE).send({ access_token: token, token_type: "Bearer", expires_in: expiresIn, scope: scopes.join(" ") });
    });

    scope.post(OAUTH_PATHS.revoke, async (req, reply) => {
      const form = parseForm(req.body);
      const client = await authenticateClient(req, form);
      const token = form.get("token");
      if (token === undefined) throw new OAuthError("invalid_request", "The token parameter is missing: send the access token to revoke.");
      // RFC 7009 2.2: an invalid, expired or foreign token is answered 200 like a revoked one, so the
      // answer tells nothing about tokens this client does not hold.
      const claims = await o.issuer.verify(token).catch(() => null);
      if (claims && claims.client_id === client.client_id && claims.org_id === client.organization_id) {
        await o.clients.keys.call(
          "revokeClientToken",
          { client_id: client.client_id, organization_id: client.organization_id, jti: claims.jti, expires_at: new Date(claims.exp * 1000).toISOString() },
          ctxOf(req),
        );
      }
      return reply.headers(NO_STORE).code(200).send();
    });

    scope.post(OAUTH_PATHS.introspect, async (req, reply) => {
      const form = parseForm(req.body);
      const client = await authenticateClient(req, form);
      const token = form.get("token");
      if (token === undefined) throw new OAuthError("invalid_request", "The token parameter is missing: send the token to inspect.");
      const found = await o.auth.inspect(token, ctxOf(req));
      // Another organization's token is not active for this client: it learns nothing of it.
      if (!found || found.identity.organization_id !== client.organization_id) return reply.headers(NO_STORE).send({ active: false });
      const { claims, identity } = found;
      return reply.headers(NO_STORE).send({
        active: true,
        scope: identity.scopes.join(" "),
        client_id: claims.client_id,
        sub: claims.sub,
        org_id: claims.org_id,
        token_type: "Bearer",
        exp: claims.exp,
        iat: claims.iat,
        iss: claims.iss,
        aud: o.issuer.audience,
        jti: claims.jti,
      });
    });
  });

  app.get(OAUTH_PATHS.metadata, async (_req, reply) => {
    const methods = ["client_secret_basic", "client_secret_post"];
    return reply.header("cache-control", PUBLIC_FOR_A_WHILE).send({
      issuer: o.issuer.issuer(),
      token_endpoint: `${base()}${OAUTH_PATHS.token}`,
      revocation_endpoint: `${base()}${OAUTH_PATHS.revoke}`,
      introspection_endpoint: `${base()}${OAUTH_PATHS.introspect}`,
      jwks_uri: `${base()}${OAUTH_PATHS.jwks}`,
      grant_types_supported: ["client_credentials"],
      response_types_supported: [],
      token_endpoint_auth_methods_supported: methods,
      revocation_endpoint_auth_methods_supported: methods,
      introspection_endpoint_auth_methods_supported: methods,
      scopes_supported: [...SCOPES],
      service_documentation: `${base()}/docs`,
    });
  });

  app.get(OAUTH_PATHS.jwks, async (_req, reply) => reply.header("cache-control", PUBLIC_FOR_A_WHILE).send(o.issuer.jwks));
}
