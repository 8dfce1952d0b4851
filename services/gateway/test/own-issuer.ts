import { DEV_OAUTH_SIGNING_KEY } from "@tasksvc/secrets";
import { createOAuthIssuer, type OAuthIssuer } from "../src/oauth/issuer.js";

/** The issuer of our own OAuth clients' tokens as a test stack's gateways have it (the development key, the stack's issuer). */
export function ownIssuer(): Promise<OAuthIssuer> {
  return createOAuthIssuer({
    keys: [{ kid: DEV_OAUTH_SIGNING_KEY.kid, alg: "ES256", jwk: { ...DEV_OAUTH_SIGNING_KEY } }],
    issuer: () => "http://tasksvc.test",
    audience: "tasksvc-api",
  });
}
