/** RFC 6749 5.2's error codes, the ones this server answers (with 401 for invalid_client, else 400). */
export type OAuthErrorCode = "invalid_request" | "invalid_client" | "invalid_scope" | "unsupported_grant_type";

export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** HTTP Basic was tried: a 401 names that scheme in WWW-Authenticate (RFC 6749 5.2). */
    readonly basicTried = false,
  ) {
    super(description);
    this.name = "OAuthError";
  }
  get status(): 400 | 401 {
    return this.error === "invalid_client" ? 401 : 400;
  }
  /** RFC 6749 5.2 allows printable ASCII but the double quote and the backslash in a description. */
  get body(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.error, error_description: this.description.replace(/[^\x20-\x21\x23-\x5B\x5D-\x7E]/g, "?") };
  }
}

/** Form bodies of the /oauth endpoints are small: a client id, a secret, a token, a few scopes. */
export const MAX_FORM_BYTES = 8 * 1024;

/**
 * A form body as RFC 6749 reads it: a parameter sent twice is an invalid_request (3.1, 3.2), and an
 * empty value counts as absent.
 */
export function parseForm(body: unknown): Map<string, string> {
  if (body === undefined || body === null || body === "") return new Map();
  if (typeof body !== "string") throw new OAuthError("invalid_request", "Send the parameters as a form: Content-Type: application/x-www-form-urlencoded.");
  const out = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(body)) {
    if (out.has(name)) throw new OAuthError("invalid_request", `The parameter ${name} is sent more than once.`);
    if (value !== "") out.set(name, value);
  }
  return out;
}

export interface ClientCredentials {
  clientId: string;
  secret: string;
  basic: boolean;
}

/** Basic's user and password are form-encoded first (RFC 6749 2.3.1), so `+` and `%` mean what they do in a form. */
function formDecode(text: string): string {
  return new URLSearchParams(`v=${text}`).get("v") ?? "";
}

/** HTTP Basic or the form's client_id and client_secret, never both (RFC 6749 2.3: one method per request). */
export function clientCredentials(authorization: string | undefined, form: Map<string, string>): ClientCredentials {
  const inBody = form.has("client_id") || form.has("client_secret");
  if (authorization !== undefined) {
    const m = /^Basic[ ]+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
    if (inBody)
      throw new OAuthError("invalid_request", "Authenticate the client one way only: HTTP Basic or client_id and client_secret in the form, not both.");
    if (!m?.[1]) throw new OAuthError("invalid_client", "Authenticate the client with HTTP Basic (client_id:client_secret).", true);
    const decoded = Buffer.from(m[1], "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) throw new OAuthError("invalid_client", "The Basic credentials must be client_id:client_secret.", true);
    const clientId = formDecode(decoded.slice(0, colon));
    const secret = formDecode(decoded.slice(colon + 1));
    if (clientId === "" || secret === "") throw new OAuthError("invalid_client", "The Basic credentials must be client_id:client_secret.", true);
    return { clientId, secret, basic: true };
  }
  const clientId = form.get("client_id");
  const secret = form.get("client_secret");
  if (clientId === undefined || secret === undefined) {
    throw new OAuthError("invalid_client", "Authenticate the client: HTTP Basic, or client_id and client_secret in the form.");
  }
  return { clientId, secret, basic: false };
}

/**
 * RFC 6749 3.3: space-delimited scope tokens; absent means every scope the client has. A scope
 * the client lacks, or one that does not exist, is invalid_scope.
 */
export function grantedScopes<S extends string>(requested: string | undefined, allowed: readonly S[]): S[] {
  if (requested === undefined) return [...allowed];
  const asked = requested.split(" ").filter((s) => s !== "");
  if (asked.length === 0) throw new OAuthError("invalid_scope", "The scope parameter names no scope; omit it to get every scope of the client.");
  const outside = asked.filter((s) => !(allowed as readonly string[]).includes(s));
  if (outside.length > 0)
    throw new OAuthError("invalid_scope", `The client may not ask for ${outside.map((s) => `'${s}'`).join(", ")}: its scopes are ${allowed.join(" ")}.`);
  return [...new Set(asked)] as S[];
}
