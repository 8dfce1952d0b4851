import { describe, expect, it } from "vitest";
import { clientCredentials, grantedScopes, OAuthError, parseForm } from "../src/oauth/form.js";

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

function refusal(fn: () => unknown): OAuthError {
  try {
    fn();
  } catch (e) {
    if (e instanceof OAuthError) return e;
    throw e;
  }
  throw new Error("expected an OAuthError");
}

describe("the /oauth form", () => {
  it("when a form is parsed, then its parameters are decoded, empty ones count as absent, and one sent twice is invalid_request", () => {
    expect(parseForm("grant_type=client_credentials&scope=tasks%3Aread+tasks%3Awrite&client_id=")).toEqual(
      new Map([
        ["grant_type", "client_credentials"],
        ["scope", "tasks:read tasks:write"],
      ]),
    );
    expect(parseForm(undefined)).toEqual(new Map());
    const twice = refusal(() => parseForm("scope=a&scope=b"));
    expect(twice.body).toEqual({ error: "invalid_request", error_description: "The parameter scope is sent more than once." });
    expect(twice.status).toBe(400);
  });

  it("when the body is not a form (JSON parsed as an object), then invalid_request", () => {
    expect(refusal(() => parseForm({ grant_type: "client_credentials" })).error).toBe("invalid_request");
  });
});

describe("client authentication", () => {
  it("when the client uses HTTP Basic, then its form-encoded id and secret are decoded", () => {
    expect(clientCredentials(basic("cli_a%2Bb", "se+cret%3A1"), new Map())).toEqual({ clientId: "cli_a+b", secret: "se cret:1", basic: true });
  });

  it("when the client sends its id and secret in the form, then they are taken from there", () => {
    const form = new Map([
      ["client_id", "cli_x"],
      ["client_secret", "s"],
    ]);
    expect(clientCredentials(undefined, form)).toEqual({ clientId: "cli_x", secret: "s", basic: false });
  });

  it("when both ways are used at once, then invalid_request; when neither, invalid_client without a Basic challenge", () => {
    const both = refusal(() => clientCredentials(basic("cli_x", "s"), new Map([["client_id", "cli_x"]])));
    expect(both.error).toBe("invalid_request");
    const none = refusal(() => clientCredentials(undefined, new Map([["client_id", "cli_x"]])));
    expect(none.error).toBe("invalid_client");
    expect(none.status).toBe(401);
    expect(none.basicTried).toBe(false);
  });

  it("when the Basic credentials are malformed or another scheme is sent, then invalid_client with a Basic challenge", () => {
    for (const header of ["Basic !!!", `Basic ${Buffer.from("no-colon").toString("base64")}`, basic("", "s"), "Bearer abc"]) {
      const e = refusal(() => clientCredentials(header, new Map()));
      expect(e.error, header).toBe("invalid_client");
      expect(e.basicTried, header).toBe(true);
    }
  });
});

describe("granted scopes", () => {
  const allowed = ["tasks:read", "tasks:write"] as const;
  it("when no scope is asked for, then every scope of the client; when some are, exactly those (once each)", () => {
    expect(grantedScopes(undefined, allowed)).toEqual(["tasks:read", "tasks:write"]);
    expect(grantedScopes("tasks:read tasks:read", allowed)).toEqual(["tasks:read"]);
  });

  it("when a scope outside the client's is asked for, or the parameter names none, then invalid_scope with a description in RFC 6749's characters", () => {
    const outside = refusal(() => grantedScopes('tasks:read members:write "x\\', allowed));
    expect(outside.error).toBe("invalid_scope");
    expect(outside.body.error_description).toMatch(/'members:write'/);
    expect(outside.body.error_description).toMatch(/^[\x20-\x21\x23-\x5B\x5D-\x7E]+$/);
    expect(refusal(() => grantedScopes("  ", allowed)).error).toBe("invalid_scope");
  });
});
