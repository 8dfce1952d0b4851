import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import {
  KeyIdParams,
  keysRpc,
  OrganizationIdParams,
  PLANS,
  ROLES,
  SCOPES,
  systemContext,
  ADMIN_CLI_CREDENTIAL,
  type OpInput,
  type OpName,
  type OpOutput,
  type RpcContext,
} from "@tasksvc/contracts";
import { isAppError } from "@tasksvc/errors";
import type { RpcClient } from "@tasksvc/nats";
import type { z } from "zod";

type Keys = typeof keysRpc;

/** `npm run admin --` runs the same file. */
export const BIN = "tasksvc-admin";

interface Flag {
  value: string;
  description: string;
  required?: boolean;
}

type Values = Record<string, string | undefined>;
type Call = <K extends OpName<Keys>>(op: K, input: OpInput<Keys, K>, ctx?: RpcContext) => Promise<OpOutput<Keys, K>>;

interface Command {
  description: string;
  prints: string;
  flags: Record<string, Flag>;
  /** Checked before any NATS connection, with the contracts' own schema, so the rules are the service's. */
  check(v: Values): { schema: z.ZodType; input: Record<string, unknown>; fields?: Record<string, string> };
  run(input: Record<string, unknown>, call: Call, v: Values): Promise<unknown>;
}

class UsageError extends Error {}

/** Checked here so the message names the flag as typed. */
function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${flag} must be a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}

const ORG_ID: Flag = { value: "ID", description: "organization id (org_…), as bootstrap printed it", required: true };
const USER_ID: Flag = { value: "ID", description: "user id (usr_…), as bootstrap, add-user or list-members printed it", required: true };
const PLAN: Flag = { value: PLANS.join("|"), description: "plan (what each allows: docs/plans.md)", required: true };
const ROLE: Flag = { value: ROLES.join("|"), description: "role in the organization", required: true };

function adminOp<K extends OpName<Keys>>(op: K, toInput: (v: Values) => Record<string, unknown>): Pick<Command, "check" | "run"> {
  return {
    check: (v) => ({ schema: keysRpc.ops[op].input, input: toInput(v) }),
    run: (input, call) => call(op, input as OpInput<Keys, K>),
  };
}

/**
 * The public operations act for a caller of --org, with the trust of NATS itself. They answer an
 * empty page for an unknown id, so the organization is looked up first: a typo is not "no keys".
 */
function actingFor(org: string): RpcContext {
  return { ...systemContext(`admin_${randomUUID()}`), organization_id: org, user_id: "admin-cli", credential_id: "admin-cli", scopes: [...SCOPES] };
}

async function allPages<T>(fetch: (after: string | undefined) => Promise<{ data: T[]; has_more: boolean; next_cursor: string | null }>): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  for (;;) {
    const p = await fetch(after);
    out.push(...p.data);
    if (!p.has_more || !p.next_cursor) return out;
    after = p.next_cursor;
  }
}

const orgOnly = (v: Values) => ({ schema: OrganizationIdParams, input: { organization_id: v["org"] }, fields: { organization_id: "org" } });

/** These names, flags and JSON fields are a contract (new ones may be added). */
export const COMMANDS: Record<string, Command> = {
  bootstrap: {
    description:
      "Create an organization, its owner and an owner API key with every scope. Run again with the same --org and --email, it refuses " +
      "(exit 1) unless --if-exists reuse, which answers the existing organization and owner with a fresh key (the plan is left as it is).",
    prints: "{ organization_id, user_id, api_key }",
    flags: {
      org: {
        value: "NAME",
        description: "organization name: one line of 1-200 characters, trimmed, not blank, without control or bidirectional control characters",
        required: true,
      },
      plan: PLAN,
      email: { value: "E", description: "owner's email", required: true },
      "if-exists": { value: "refuse|reuse", description: "when this --org already has this --email as an owner (default refuse)" },
    },
    ...adminOp("bootstrap", (v) => ({ org: v["org"], plan: v["plan"], email: v["email"], if_exists: v["if-exists"] ?? "refuse" })),
  },
  "add-user": {
    description: "Add a user (created if new) to an organization with a role, and mint them an API key with the default scopes.",
    prints: "{ user_id, api_key }",
    flags: { org: ORG_ID, email: { value: "E", description: "user's email", required: true }, role: ROLE },
    ...adminOp("addUser", (v) => ({ org: v["org"], email: v["email"], role: v["role"] })),
  },
  "set-role": {
    description: "Change a member's role; takes effect on their next request. The last owner cannot be demoted (make another member an owner first).",
    prints: "{ user_id, role }",
    flags: { org: ORG_ID, user: USER_ID, role: ROLE },
    ...adminOp("setRole", (v) => ({ org: v["org"], user: v["user"], role: v["role"] })),
  },
  "set-plan": {
    description: "Change an organization's plan; takes effect on its next request.",
    prints: "{ organization_id, plan }",
    flags: { org: ORG_ID, plan: PLAN },
    ...adminOp("setPlan", (v) => ({ org: v["org"], plan: v["plan"] })),
  },
  "set-limits": {
    description: "Override an organization's plan limits (each flag given replaces that limit; the others stay; each plan's defaults: docs/plans.md).",
    prints: "{ organization_id, plan, limits: { burst, burst_window_seconds, quota, max_file_size, storage, webhook_endpoints, scans } }",
    flags: {
      org: ORG_ID,
      burst: { value: "N", description: "requests per credential per burst window" },
      quota: { value: "N", description: "API calls per 30-day period" },
      "max-file-size": { value: "BYTES", description: "largest attachment" },
      storage: { value: "BYTES", description: "attachment storage allowance" },
      "webhook-endpoints": { value: "N", description: "webhook endpoints the organization may have (every one gets each event)" },
      scans: {
        value: "N",
        description: "lists, searches and feed pages it may run at once on each tasks replica, 1-200 (default: a quarter of the replica's connections)",
      },
    },
    ...adminOp("setLimits", (v) => ({
      org: v["org"],
      burst: num(v["burst"], "burst"),
      quota: num(v["quota"], "quota"),
      max_file_size: num(v["max-file-size"], "max-file-size"),
      storage: num(v["storage"], "storage"),
      webhook_endpoints: num(v["webhook-endpoints"], "webhook-endpoints"),
      scans: num(v["scans"], "scans"),
    })),
  },
  "legacy-key": {
    description: "Mint a pre-migration, user-owned API key (legacy format) for a member.",
    prints: "{ id, api_key }",
    flags: { org: ORG_ID, user: USER_ID },
    ...adminOp("legacyKey", (v) => ({ org: v["org"], user: v["user"] })),
  },
  "issue-token": {
    description:
      "Sign an OAuth access token for a member with the development issuer (refused where the deployment names a real issuer: OAUTH_JWKS_URL or OAUTH_PUBLIC_KEY).",
    prints: "{ access_token, expires_at }",
    flags: {
      org: ORG_ID,
      user: USER_ID,
      scopes: { value: '"a b"', description: "space-separated scopes (e.g. tasks:read tasks:write)", required: true },
      ttl: { value: "S", description: "lifetime in seconds, 1-86400 (default 3600)" },
    },
    ...adminOp("issueToken", (v) => ({ org: v["org"], user: v["user"], scopes: (v["scopes"] ?? "").split(/\s+/).filter(Boolean), ttl: num(v["ttl"], "ttl") })),
  },
  "list-keys": {
    description: "List an organization's API keys that are not revoked (legacy ones too), newest first; never a secret.",
    prints: "{ data: [{ id, name, key_prefix, scopes, last_used_at, expires_at, created_at, legacy }] }",
    flags: { org: ORG_ID },
    check: orgOnly,
    async run(_i, call, v) {
      const ctx = actingFor(v["org"] as string);
      await call("getOrganization", { organization_id: ctx.organization_id as string }, ctx);
      return { data: await allPages((after) => call("listApiKeys", { limit: 100, after }, ctx)) };
    },
  },
  "revoke-key": {
    description: "Revoke an API key of an organization; it stops working on the next request (legacy keys are kept, marked revoked).",
    prints: "{ id, legacy }",
    flags: { org: ORG_ID, key: { value: "ID", description: "API key id (key_…), as list-keys printed it", required: true } },
    check: (v) => ({
      schema: OrganizationIdParams.extend(KeyIdParams.shape),
      input: { organization_id: v["org"], key_id: v["key"] },
      fields: { organization_id: "org", key_id: "key" },
    }),
    run: (i, call) => call("revokeApiKey", { key_id: i["key_id"] as string }, actingFor(i["organization_id"] as string)),
  },
  "list-members": {
    description: "List an organization's members, oldest first.",
    prints: "{ data: [{ user_id, email, role, created_at }] }",
    flags: { org: ORG_ID },
    check: orgOnly,
    async run(_i, call, v) {
      const ctx = actingFor(v["org"] as string);
      await call("getOrganization", { organization_id: ctx.organization_id as string }, ctx);
      return { data: await allPages((after) => call("listMembers", { limit: 100, after }, ctx)) };
    },
  },
  "remove-member": {
    description: "Remove a member from an organization and revoke their API keys there; the last owner cannot be removed (set-role changes a role).",
    prints: "{ organization_id, user_id, revoked_keys }",
    flags: { org: ORG_ID, user: USER_ID },
    ...adminOp("removeMember", (v) => ({ org: v["org"], user: v["user"] })),
  },
};

export const ENVIRONMENT: [string, string][] = [
  ["NATS_URL", "NATS server(s), comma-separated (default nats://127.0.0.1:4222)"],
  ["NATS_NAMESPACE", "subject prefix of the stack whose keys service answers (default tasksvc)"],
  ["RPC_TIMEOUT_MS", "how long to wait for the keys service, in ms (default 5000)"],
];

function flagUsage(f: string, d: Flag): string {
  return d.required ? `--${f} ${d.value}` : `[--${f} ${d.value}]`;
}

export function commandUsage(name: string): string {
  const cmd = COMMANDS[name];
  if (!cmd) return `${BIN} <command> [flags] [--json]`;
  return [BIN, name, ...Object.entries(cmd.flags).map(([f, d]) => flagUsage(f, d)), "[--json]"].join(" ");
}

function table(rows: [string, string][]): string[] {
  const w = Math.max(...rows.map(([a]) => a.length));
  return rows.map(([a, b]) => `  ${a.padEnd(w)}  ${b}`);
}

const FOOTER = [
  "",
  "Environment:",
  ...table(ENVIRONMENT),
  "",
  "Exit status: 0 done, 1 refused by the keys service (or none answered), 2 usage error (checked before connecting).",
];

export function usage(): string {
  return [
    `usage: ${BIN} <command> [flags] [--json]`,
    `       ${BIN} <command> --help    (or: ${BIN} help <command>)`,
    "",
    "Talks to the keys service over NATS. With --json, stdout is one JSON object (for jq); errors go to stderr.",
    "What each plan allows: docs/plans.md; the HTTP API these keys call: docs/api.md (both in the repository).",
    "",
    "Commands:",
    ...table(Object.entries(COMMANDS).map(([n, c]) => [n, c.description.split(/(?<=\.) /)[0] ?? c.description])),
    ...FOOTER,
  ].join("\n");
}

export function commandHelp(name: string): string {
  const cmd = COMMANDS[name];
  if (!cmd) return usage();
  const flags: [string, string][] = Object.entries(cmd.flags).map(([f, d]) => [`--${f} ${d.value}`, `${d.required ? "required: " : ""}${d.description}`]);
  flags.push(["--json", "print the result as one JSON object on stdout"], ["--help, -h", "this help"]);
  return [`usage: ${commandUsage(name)}`, "", cmd.description, "", "Flags:", ...table(flags), "", `Prints (with --json): ${cmd.prints}`, ...FOOTER].join("\n");
}

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export interface CliTarget {
  natsUrl: string;
  namespace: string;
}

/** Also used by main.ts when NATS is unreachable. */
export function unreachable(t: CliTarget, why: string): string {
  return `error: ${why} at NATS_URL=${t.natsUrl} NATS_NAMESPACE=${t.namespace}: the keys service must be running in that namespace (set NATS_URL / NATS_NAMESPACE to the stack's)`;
}

const hint = (name?: string) => `(usage: ${name ? commandUsage(name) : `${BIN} <command> [flags] [--json]`}; ${BIN} ${name ? `${name} ` : ""}--help)`;

function parseError(e: unknown): string {
  const err = e as Error & { code?: string };
  if (err.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const m = /'([^']+)'/.exec(err.message);
    return `unknown flag ${m?.[1] ?? ""}`.trim();
  }
  if (err.code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    const m = /'([^']+)'/.exec(err.message);
    return `unexpected argument ${m?.[1] ?? ""}`.trim();
  }
  return (err.message.split(/\.\s/)[0] ?? err.message).replace(/\.$/, "");
}

/** Exit code 0 ok, 1 refused or none answered, 2 usage; a usage error never connects. */
export async function runCli(argv: string[], keys: () => Promise<RpcClient<Keys>>, io: CliIo, target?: CliTarget): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === "--help" || first === "-h" || first === "help") {
    const topic = first === "help" ? rest[0] : undefined;
    if (topic !== undefined && !COMMANDS[topic]) {
      io.err(`error: unknown command ${JSON.stringify(topic)} ${hint()}`);
      return 2;
    }
    if (first === undefined) {
      io.err(usage());
      return 2;
    }
    io.out(topic ? commandHelp(topic) : usage());
    return 0;
  }
  const name = first;
  const cmd = COMMANDS[name];
  if (!cmd) {
    io.err(
      `error: unknown command ${JSON.stringify(name)}; commands: ${Object.keys(COMMANDS).join(", ")}\nusage: ${BIN} <command> [flags] [--json]; ${BIN} --help`,
    );
    return 2;
  }
  if (rest.some((a) => a === "--help" || a === "-h")) {
    io.out(commandHelp(name));
    return 0;
  }
  const usageError = (msg: string) => {
    io.err(`error: ${name}: ${msg} ${hint(name)}`);
    return 2;
  };

  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(Object.keys(cmd.flags).map((f) => [f, { type: "string" as const }]));
    ({ values } = parseArgs({ args: rest, options: { ...options, json: { type: "boolean" } }, strict: true, allowPositionals: false }));
  } catch (e) {
    return usageError(parseError(e));
  }
  const { json, ...flags } = values as Values & { json?: boolean };
  const missing = Object.entries(cmd.flags).filter(([f, d]) => d.required && (flags[f] === undefined || flags[f] === ""));
  if (missing.length > 0) return usageError(`${missing.map(([f]) => `--${f}`).join(", ")} ${missing.length === 1 ? "is" : "are"} required`);

  let input: Record<string, unknown>;
  try {
    const { schema, input: raw, fields } = cmd.check(flags);
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = String(issue?.path[0] ?? "");
      const flag = fields?.[field] ?? field.replace(/_/g, "-");
      return usageError(`--${flag}: ${issue?.message ?? "invalid"}${flags[flag] === undefined ? "" : ` (got ${JSON.stringify(flags[flag])})`}`);
    }
    input = raw;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return usageError(e.message);
  }

  let client: RpcClient<Keys> | undefined;
  const call: Call = async (op, opInput, ctx) => {
    client ??= await keys();
    // Named, so the audit log tells the administrator's commands from the service's own work.
    return client.call(op, opInput, ctx ?? { ...systemContext(`admin_${randomUUID()}`), credential_id: ADMIN_CLI_CREDENTIAL });
  };
  try {
    const result = await cmd.run(input, call, flags);
    if (json) io.out(JSON.stringify(result));
    else printReadable(result, io);
    return 0;
  } catch (e) {
    if (!isAppError(e)) throw e;
    if (json) io.out(JSON.stringify({ error: { code: e.code, detail: e.detail, errors: e.errors ?? [] } }));
    if (e.code === "service_unavailable" && target) {
      io.err(unreachable(target, "no keys service answered"));
      return 1;
    }
    // Field pointers name RPC fields (max_file_size); show them as the flags a person typed.
    const fields = (e.errors ?? []).map((f) => `--${f.pointer.replace(/^\//, "").split("/")[0]?.replace(/_/g, "-")}: ${f.message}`);
    io.err([`error (${e.code}): ${e.detail}`, ...fields].join(" "));
    return 1;
  }
}

function show(v: unknown): string {
  if (v === null || v === undefined) return "-";
  if (Array.isArray(v)) return v.join(",");
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

function printReadable(result: unknown, io: CliIo): void {
  const r = result as Record<string, unknown>;
  if (Array.isArray(r["data"]) && Object.keys(r).length === 1) {
    const items = r["data"] as Record<string, unknown>[];
    if (items.length === 0) io.out("(none)");
    for (const item of items)
      io.out(
        Object.entries(item)
          .map(([k, v]) => `${k}=${show(v)}`)
          .join(" "),
      );
    return;
  }
  for (const [k, v] of Object.entries(r)) io.out(`${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`);
}
