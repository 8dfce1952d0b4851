import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { isAppError } from "@tasksvc/errors";
import { api, factories } from "@tasksvc/testing";
import { describe, expect, inject, it } from "vitest";

const stack = inject("stack");
const gw = api(stack.gatewayUrls[0] as string);
const CLI = fileURLToPath(new URL("../dist/main.js", import.meta.url));

/** Runs the built CLI exactly as `npm run -s admin -- …` does, against this run's stack. */
function adminIn(env: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, [CLI, ...args], {
    env: { PATH: process.env["PATH"], NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace, ...env },
    encoding: "utf8",
    timeout: 20_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) };
}
const admin = (...args: string[]) => adminIn({}, ...args);

/** A NATS_URL where nothing listens: a command that reaches for NATS fails, a local check does not. */
async function closedPort(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
  const { port } = srv.address() as AddressInfo;
  await new Promise((ok) => srv.close(ok));
  return `nats://127.0.0.1:${port}`;
}
const uniq = () => randomBytes(4).toString("hex");

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
      limits: { burst: 7, burst_window_seconds: 60, quota: 500_000, max_file_size: 2048, storage: 100 * 1024 ** 3, webhook_endpoints: 16, scans: null },
    });
    const endpoints = admin("set-limits", "--org", org, "--webhook-endpoints", "40", "--scans", "5", "--json").json();
    expect(endpoints.limits).toMatchObject({ burst: 7, max_file_size: 2048, webhook_endpoints: 40, scans: 5 });
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
    const [org, email] = [`Solo ${uniq()}`, `solo-${uniq()}@solo.test`];
    expect(admin("bootstrap", "--org", org, "--plan", "pro", "--email", email, "--json").code).toBe(0);
    const r = admin("bootstrap", "--org", org, "--plan", "pro", "--email", email);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("validation_failed");
    expect(r.stderr).toContain("--if-exists");
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
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
    expect(unknown.stderr).toContain("usage: tasksvc-admin");
    const badFlag = admin("set-plan", "--org", "x", "--colour", "red");
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain("set-plan --org ID --plan");
    const badNumber = admin("set-limits", "--org", "x", "--burst", "lots");
    expect(badNumber.code).toBe(2);
    expect(badNumber.stderr).toContain("--burst must be a whole number");
  });

  it("when --help is asked of the CLI or of any command, then exit 0 with its flags and environment", () => {
    const top = admin("--help");
    expect(top.code, top.stderr).toBe(0);
    for (const name of [
      "bootstrap",
      "add-user",
      "set-role",
      "set-plan",
      "set-limits",
      "legacy-key",
      "issue-token",
      "list-keys",
      "revoke-key",
      "list-members",
      "remove-member",
    ]) {
      expect(top.stdout).toContain(`  ${name} `);
      for (const form of name === "bootstrap"
        ? [
            [name, "--help"],
            [name, "-h"],
            ["help", name],
          ]
        : [[name, "--help"]]) {
        const r = admin(...form);
        expect(r.code, `${form.join(" ")}: ${r.stderr}`).toBe(0);
        expect(r.stdout).toContain(`usage: tasksvc-admin ${name} `);
        expect(r.stdout).toContain("NATS_NAMESPACE");
        expect(r.stdout).toContain("RPC_TIMEOUT_MS");
      }
    }
    const boot = admin("bootstrap", "--help");
    expect(boot.stdout).toMatch(/--org NAME +required: /);
    expect(boot.stdout).toMatch(/--if-exists refuse\|reuse +when /);
    expect(boot.stdout).toContain("Prints (with --json): { organization_id, user_id, api_key }");
    // Help wins over other flags, even wrong ones.
    expect(admin("set-plan", "--colour", "red", "--help").code).toBe(0);
    expect(admin("help", "frobnicate").code).toBe(2);
    // Sixteen processes one after the other: on two busy cores each start can take seconds.
  }, 120_000);

  it("when a flag is missing or malformed, then one line names it and exit 2 without contacting NATS", async () => {
    const env = { NATS_URL: await closedPort() };
    const cases: [string[], string][] = [
      [["bootstrap", "--plan", "pro"], "--org, --email are required"],
      [["bootstrap", "--org", "Bad", "--plan", "enterprise", "--email", "x@y.test"], "--plan"],
      [["bootstrap", "--org", "A", "--plan", "pro", "--email", "not-an-email"], "--email"],
      [["bootstrap", "--org", "A", "--plan", "pro", "--email", "a@a.test", "--if-exists", "maybe"], "--if-exists"],
      [["add-user", "--org", "org_x", "--email", "m@x.test", "--role", "boss"], "--role"],
      [["set-plan", "--org", "org_x"], "--plan is required"],
      [["set-plan", "--org"], "--org"],
      [["set-limits", "--org", "org_x", "--quota", "0"], "--quota"],
      [["set-limits", "--org", "org_x", "--webhook-endpoints", "0"], "--webhook-endpoints"],
      [["issue-token", "--org", "org_x", "--user", "usr_x", "--scopes", "tasks:fly"], "--scopes"],
      [["issue-token", "--org", "org_x", "--user", "usr_x", "--scopes", "tasks:read", "--ttl", "999999"], "--ttl"],
      [["revoke-key", "--org", "org_x"], "--key is required"],
      [["list-members"], "--org is required"],
    ];
    for (const [args, flag] of cases) {
      const r = adminIn(env, ...args);
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(flag);
      expect(r.stderr).not.toContain("NATS_URL");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stdout).toBe("");
    }
  });

  it("when keys are listed and one is revoked, then the list shows them and the revoked key stops working", async () => {
    const boot = admin("bootstrap", "--org", "Keys", "--plan", "pro", "--email", `k-${uniq()}@keys.test`, "--json").json();
    const org = boot.organization_id as string;
    const ci = await gw.post("/v1/api-keys", { name: "ci", scopes: ["tasks:read"], expires_in_days: 30 }, { token: boot.api_key });
    expect(ci.status, ci.text).toBe(201);

    const listed = admin("list-keys", "--org", org, "--json");
    expect(listed.code, listed.stderr).toBe(0);
    const keys = listed.json().data as Record<string, unknown>[];
    expect(keys.map((k) => k["name"])).toEqual(["ci", "bootstrap"]);
    expect(Object.keys(keys[0] ?? {}).sort()).toEqual(["created_at", "expires_at", "id", "key_prefix", "last_used_at", "legacy", "name", "scopes"]);
    expect(keys[0]).toMatchObject({ id: ci.body.id, key_prefix: ci.body.key_prefix, scopes: ["tasks:read"], legacy: false });
    expect(JSON.stringify(keys)).not.toContain(ci.body.key);
    const readable = admin("list-keys", "--org", org);
    expect(readable.stdout).toMatch(new RegExp(`^id=${ci.body.id} name=ci key_prefix=svc_live_\\S+ scopes=tasks:read `, "m"));

    const revoked = admin("revoke-key", "--org", org, "--key", ci.body.id, "--json");
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.json()).toEqual({ id: ci.body.id, legacy: false });
    expect((await gw.get("/v1/tasks", { token: ci.body.key })).status).toBe(401);
    expect(
      admin("list-keys", "--org", org, "--json")
        .json()
        .data.map((k: { id: string }) => k.id),
    ).not.toContain(ci.body.id);

    const again = admin("revoke-key", "--org", org, "--key", ci.body.id);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("resource_not_found");
    // Another organization's key is not found through this one.
    const other = admin("bootstrap", "--org", "Other", "--plan", "pro", "--email", `o-${uniq()}@other.test`, "--json").json();
    const otherKey = admin("list-keys", "--org", other.organization_id, "--json").json().data[0].id as string;
    expect(admin("revoke-key", "--org", org, "--key", otherKey).code).toBe(1);
    expect((await gw.get("/v1/organizations", { token: other.api_key })).status).toBe(200);
    const missing = admin("list-keys", "--org", "org_missing");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("resource_not_found");
  });

  it("when members are listed and one is removed, then their keys stop and the last owner stays", async () => {
    const boot = admin("bootstrap", "--org", "Team", "--plan", "team", "--email", `t-${uniq()}@team.test`, "--json").json();
    const org = boot.organization_id as string;
    const email = `m-${uniq()}@team.test`;
    const member = admin("add-user", "--org", org, "--email", email, "--role", "member", "--json").json();

    const listed = admin("list-members", "--org", org, "--json");
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.json().data).toEqual([
      expect.objectContaining({ user_id: boot.user_id, role: "owner" }),
      { user_id: member.user_id, email, role: "member", created_at: expect.any(String) },
    ]);
    expect(admin("list-members", "--org", org).stdout).toContain(`user_id=${member.user_id} email=${email} role=member created_at=`);

    expect((await gw.get("/v1/members", { token: member.api_key })).status).toBe(200);
    const removed = admin("remove-member", "--org", org, "--user", member.user_id, "--json");
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.json()).toEqual({ organization_id: org, user_id: member.user_id, revoked_keys: 1 });
    expect((await gw.get("/v1/members", { token: member.api_key })).status).toBe(401);
    expect(
      admin("list-members", "--org", org, "--json")
        .json()
        .data.map((m: { user_id: string }) => m.user_id),
    ).toEqual([boot.user_id]);
    expect(admin("remove-member", "--org", org, "--user", member.user_id).stderr).toContain("resource_not_found");
    const last = [["remove-member"], ["set-role", "--role", "admin"]].map(([cmd = "", ...more]) => admin(cmd, "--org", org, "--user", boot.user_id, ...more));
    for (const l of last) expect([l.code, l.stderr]).toEqual([1, expect.stringMatching(/^error \(last_owner\): .*last owner/)]);
  });

  it("when bootstrap's --org is blank, holds a control character or a bidirectional control, then exit 2 naming --org, and nothing is created", async () => {
    const env = { NATS_URL: await closedPort() };
    const cases: [string, string][] = [
      ["   ", "must not be blank"],
      ["\t", "must not be blank"],
      ["Acme\nInc", "single line"],
      ["Acme\u0007", "control characters"],
      ["Acme\u202Egpj.exe", "bidirectional control"],
      ["\u2066Acme\u2069", "bidirectional control"],
    ];
    for (const [name, why] of cases) {
      const r = adminIn(env, "bootstrap", "--org", name, "--plan", "pro", "--email", "names@names.test");
      expect(r.code, `${JSON.stringify(name)}: ${r.stderr}`).toBe(2);
      expect([r.stderr.includes("--org"), r.stderr.includes(why), r.stderr.trim().split("\n").length], r.stderr).toEqual([true, true, 1]);
    }
  });

  it("when the keys service is asked directly for an organization named with a bidirectional control or blank, then it refuses, and a padded name is stored trimmed", async () => {
    const keys = factories(stack);
    try {
      for (const org of ["Acme\u202Egpj.exe", " \t ", "Acme\r\nX-Injected: 1"]) {
        const refused = await keys.admin("bootstrap", { org, plan: "pro", email: `n-${uniq()}@names.test` }).then(
          () => "created",
          (e: unknown) => (isAppError(e) ? `${e.code} ${e.errors?.map((x) => x.pointer).join(",")}` : String(e)),
        );
        expect(refused, JSON.stringify(org)).toBe("validation_failed /org");
      }
      const padded = admin("bootstrap", "--org", `  Padded ${uniq()}  `, "--plan", "pro", "--email", `p-${uniq()}@names.test`, "--json");
      expect(padded.code, padded.stderr).toBe(0);
      const orgs = await gw.get("/v1/organizations", { token: padded.json().api_key });
      expect(orgs.body.data[0].name).toMatch(/^Padded [0-9a-f]{8}$/);
    } finally {
      await keys.close();
    }
  });

  it("when bootstrap runs twice with the same org and email, then it refuses, or with --if-exists reuse answers the same org with a new key", async () => {
    const org = `CI ${uniq()}`;
    const email = `ci-${uniq()}@ci.test`;
    const first = admin("bootstrap", "--org", org, "--plan", "pro", "--email", email, "--json").json();

    const refused = admin("bootstrap", "--org", org, "--plan", "pro", "--email", email);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toContain(`already exists`);
    expect(refused.stderr).toContain("--if-exists");
    expect(refused.stderr).toContain(first.organization_id);
    const refusedJson = admin("bootstrap", "--org", org, "--plan", "pro", "--email", email, "--if-exists", "refuse", "--json");
    expect(refusedJson.code).toBe(1);
    expect(refusedJson.json().error.code).toBe("validation_failed");

    const reused = admin("bootstrap", "--org", org, "--plan", "team", "--email", email.toUpperCase(), "--if-exists", "reuse", "--json");
    expect(reused.code, reused.stderr).toBe(0);
    const out = reused.json();
    expect(Object.keys(out).sort()).toEqual(["api_key", "organization_id", "user_id"]);
    expect(out).toMatchObject({ organization_id: first.organization_id, user_id: first.user_id });
    expect(out.api_key).not.toBe(first.api_key);
    const orgs = await gw.get("/v1/organizations", { token: out.api_key });
    expect(orgs.body.data).toEqual([expect.objectContaining({ id: first.organization_id, plan: "pro" })]);
    expect((await gw.get("/v1/organizations", { token: first.api_key })).status).toBe(200);

    // Another name, or the same name with another owner, is a new organization.
    const otherOwner = admin("bootstrap", "--org", org, "--plan", "pro", "--email", `x-${uniq()}@ci.test`, "--if-exists", "reuse", "--json").json();
    expect(otherOwner.organization_id).not.toBe(first.organization_id);
  });

  it("when no keys service answers, then one line names NATS_URL and NATS_NAMESPACE and exit 1", async () => {
    const ns = `nobody_${uniq()}`;
    const r = adminIn({ NATS_NAMESPACE: ns, RPC_TIMEOUT_MS: "500" }, "set-plan", "--org", "org_x", "--plan", "pro");
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toContain(`NATS_URL=${stack.natsUrl}`);
    expect(r.stderr).toContain(`NATS_NAMESPACE=${ns}`);
    expect(r.stderr).toContain("keys service");

    const url = await closedPort();
    const down = adminIn({ NATS_URL: url }, "list-members", "--org", "org_x", "--json");
    expect(down.code).toBe(1);
    expect(down.stderr.trim().split("\n")).toHaveLength(1);
    expect(down.stderr).toContain(`NATS_URL=${url}`);
    expect(down.stderr).toContain(`NATS_NAMESPACE=${stack.namespace}`);
  });
});

describe("how a newcomer runs the admin CLI", () => {
  const repo = fileURLToPath(new URL("../../..", import.meta.url));
  const docs = ["README.md", "tools/admin/README.md", "docs/operations.md"];
  /** Every shell line in the docs that runs the admin CLI (compose's `run --rm admin` aside). */
  const adminLines = docs.flatMap((d) =>
    readFileSync(join(repo, d), "utf8")
      .split("\n")
      .filter((l) => /tasksvc-admin (bootstrap|--help|add-user|set-|legacy-key|issue-token|list-|revoke-key|remove-member)|run -s admin|run admin/.test(l))
      .map((l) => `${d}: ${l.trim()}`),
  );

  it("when the docs show an admin command, then it runs this checkout's CLI (`npm run -s admin --`), never `npx`, which asks the registry for a name nobody here owns", () => {
    expect(adminLines.length).toBeGreaterThan(3);
    const viaRegistry = adminLines.filter((l) => /\bnpx\b|npm exec|npm x /.test(l));
    expect(viaRegistry, viaRegistry.join("\n")).toEqual([]);
  });

  it("when the README's bootstrap line is run as written, with every registry unreachable, then it prints the documented JSON and nothing else", () => {
    const line = readFileSync(join(repo, "README.md"), "utf8")
      .split("\n")
      .find((l) => l.startsWith("npm run -s admin -- bootstrap "));
    expect(line, "README.md shows `npm run -s admin -- bootstrap …`").toBeDefined();
    const args = (line as string).trim().split(/\s+/).slice(1);
    const org = args.indexOf("--org");
    args[org + 1] = `Readme-${uniq()}`;
    const r = spawnSync("npm", args, {
      cwd: repo,
      env: {
        PATH: process.env["PATH"],
        HOME: process.env["HOME"],
        NATS_URL: stack.natsUrl,
        NATS_NAMESPACE: stack.namespace,
        // Nothing answers there: a command that reached for a registry would fail.
        npm_config_registry: "http://127.0.0.1:9/",
        npm_config_offline: "true",
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(Object.keys(out).sort()).toEqual(["api_key", "organization_id", "user_id"]);
  });

  it("when npm links the bin on a fresh clone (before any build), then the bin is a committed file, not build output", () => {
    const pkg = JSON.parse(readFileSync(join(repo, "tools/admin/package.json"), "utf8"));
    const bin = pkg.bin?.["tasksvc-admin"] as string;
    expect(bin).toBeDefined();
    expect(bin.startsWith("dist/")).toBe(false);
    const tracked = spawnSync("git", ["ls-files", "--error-unmatch", `tools/admin/${bin}`], { cwd: repo, encoding: "utf8" });
    expect(tracked.status, tracked.stderr).toBe(0);
    expect(statSync(join(repo, "tools/admin", bin)).mode & 0o111, "executable").not.toBe(0);
    const help = spawnSync(process.execPath, [join(repo, "tools/admin", bin), "--help"], { encoding: "utf8", timeout: 20_000 });
    expect(help.status, help.stderr).toBe(0);
    expect(help.stdout).toContain("bootstrap");
  });
});
