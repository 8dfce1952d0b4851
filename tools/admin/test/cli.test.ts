import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { api } from "@tasksvc/testing";
import { describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(stack.gatewayUrls[0] as string);
const CLI = fileURLToPath(new URL("../dist/main.js", import.meta.url));

/** Runs the built CLI exactly as `npm run admin -- …` does, against this run's stack. */
function admin(...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env["PATH"], NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) };
}

describe("admin CLI", () => {
  it("when a new user follows the README (bootstrap, then GET /v1/organizations), then it works", async () => {
    const r = admin("bootstrap", "--org", "Acme", "--plan", "pro", "--email", "owner@acme.test", "--json");
    expect(r.code, r.stderr).toBe(0);
    const out = r.json();
    expect(Object.keys(out).sort()).toEqual(["api_key", "organization_id", "user_id"]);
    expect(out.api_key).toMatch(/^svc_live_/);
    const orgs = await gw.get("/v1/organizations", { token: out.api_key });
    expect(orgs.status, orgs.text).toBe(200);
    expect(orgs.body.data[0]).toMatchObject({ id: out.organization_id, name: "Acme", plan: "pro" });
  });

  it("when every command runs with --json, then each prints exactly its documented fields", async () => {
    const boot = admin("bootstrap", "--org", "Beta", "--plan", "free", "--email", `b-${Date.now()}@beta.test`, "--json").json();
    const org = boot.organization_id as string;

    const added = admin("add-user", "--org", org, "--email", `m-${Date.now()}@beta.test`, "--role", "member", "--json");
    expect(added.code, added.stderr).toBe(0);
    expect(Object.keys(added.json()).sort()).toEqual(["api_key", "user_id"]);
    const user = added.json().user_id as string;
    // add-user keys carry the default scopes: no api-keys:manage.
    expect((await gw.get("/v1/api-keys", { token: added.json().api_key })).status).toBe(403);

    expect(admin("set-role", "--org", org, "--user", user, "--role", "admin", "--json").json()).toEqual({ user_id: user, role: "admin" });
    expect(admin("set-plan", "--org", org, "--plan", "team", "--json").json()).toEqual({ organization_id: org, plan: "team" });
    const limits = admin("set-limits", "--org", org, "--burst", "7", "--max-file-size", "2048", "--json").json();
    expect(limits).toEqual({
      organization_id: org,
      plan: "team",
      limits: { burst: 7, burst_window_seconds: 60, quota: 500_000, max_file_size: 2048, storage: 100 * 1024 ** 3 },
    });
    const legacy = admin("legacy-key", "--org", org, "--user", user, "--json").json();
    expect(Object.keys(legacy).sort()).toEqual(["api_key", "id"]);
    expect((await gw.get("/v1/organizations", { token: legacy.api_key })).status).toBe(200);

    const tok = admin("issue-token", "--org", org, "--user", user, "--scopes", "workspaces:read members:read", "--ttl", "120", "--json").json();
    expect(Object.keys(tok).sort()).toEqual(["access_token", "expires_at"]);
    expect(Date.parse(tok.expires_at) - Date.now()).toBeLessThanOrEqual(121_000);
    const members = await gw.get("/v1/members", { token: tok.access_token });
    expect(members.status, members.text).toBe(200);
    expect(members.body.data.find((m: { user_id: string }) => m.user_id === user)?.role).toBe("admin");
  });

  it("when run without --json, then it prints readable key: value lines", () => {
    const r = admin("bootstrap", "--org", "Gamma", "--plan", "team", "--email", `g-${Date.now()}@g.test`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^organization_id: org_/m);
    expect(r.stdout).toMatch(/^api_key: svc_live_/m);
  });

  it("when input is refused by the service, then exit 1 naming the flag", () => {
    const r = admin("bootstrap", "--org", "Bad", "--plan", "enterprise", "--email", "x@y.test");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("validation_failed");
    expect(r.stderr).toContain("--plan");
  });

  it("when the organization does not exist, then exit 1 with resource_not_found", () => {
    const r = admin("set-plan", "--org", "org_missing", "--plan", "pro");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("resource_not_found");
  });

  it("when issue-token names a user outside the organization, then it is refused", () => {
    const a = admin("bootstrap", "--org", "A", "--plan", "pro", "--email", `a-${Date.now()}@a.test`, "--json").json();
    const b = admin("bootstrap", "--org", "B", "--plan", "pro", "--email", `b2-${Date.now()}@b.test`, "--json").json();
    const r = admin("issue-token", "--org", a.organization_id, "--user", b.user_id, "--scopes", "workspaces:read");
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("resource_not_found");
  });

  it("when the command or a flag is wrong, then exit 2 with usage", () => {
    const unknown = admin("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("usage: npm run admin");
    const badFlag = admin("set-plan", "--org", "x", "--colour", "red");
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("set-plan --org ID --plan");
    const badNumber = admin("set-limits", "--org", "x", "--burst", "lots");
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain("--burst must be a whole number");
  });
});
