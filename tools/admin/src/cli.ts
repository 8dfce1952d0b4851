import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { systemContext, type keysRpc, type OpInput, type OpName, type RpcContext } from "@tasksvc/contracts";
import { isAppError } from "@tasksvc/errors";
import type { RpcClient } from "@tasksvc/nats";

type Keys = typeof keysRpc;

interface Command {
  usage: string;
  flags: Record<string, { type: "string" }>;
  /** Flag values → the keys-service operation and its input (validated there by the catalog). */
  build(v: Record<string, string | undefined>): { op: OpName<Keys>; input: OpInput<Keys, OpName<Keys>> };
}

class UsageError extends Error {}

/** Whole-number flags are checked here so the message names the flag as typed. */
function num(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${flag} must be a whole number, got ${JSON.stringify(v)}`);
  return Number(v);
}
const str = { type: "string" as const };

/** DESIGN.md section 2: these names, flags and JSON fields are a contract. */
export const COMMANDS: Record<string, Command> = {
  bootstrap: {
    usage: "bootstrap --org NAME --plan free|pro|team --email E",
    flags: { org: str, plan: str, email: str },
    build: (v) => ({ op: "bootstrap", input: { org: v["org"], plan: v["plan"], email: v["email"] } as OpInput<Keys, "bootstrap"> }),
  },
  "add-user": {
    usage: "add-user --org ID --email E --role owner|admin|member",
    flags: { org: str, email: str, role: str },
    build: (v) => ({ op: "addUser", input: { org: v["org"], email: v["email"], role: v["role"] } as OpInput<Keys, "addUser"> }),
  },
  "set-role": {
    usage: "set-role --org ID --user ID --role owner|admin|member",
    flags: { org: str, user: str, role: str },
    build: (v) => ({ op: "setRole", input: { org: v["org"], user: v["user"], role: v["role"] } as OpInput<Keys, "setRole"> }),
  },
  "set-plan": {
    usage: "set-plan --org ID --plan free|pro|team",
    flags: { org: str, plan: str },
    build: (v) => ({ op: "setPlan", input: { org: v["org"], plan: v["plan"] } as OpInput<Keys, "setPlan"> }),
  },
  "set-limits": {
    usage: "set-limits --org ID [--burst N] [--quota N] [--max-file-size BYTES] [--storage BYTES]",
    flags: { org: str, burst: str, quota: str, "max-file-size": str, storage: str },
    build: (v) => ({
      op: "setLimits",
      input: {
        org: v["org"],
        burst: num(v["burst"], "burst"),
        quota: num(v["quota"], "quota"),
        max_file_size: num(v["max-file-size"], "max-file-size"),
        storage: num(v["storage"], "storage"),
      } as OpInput<Keys, "setLimits">,
    }),
  },
  "legacy-key": {
    usage: "legacy-key --org ID --user ID",
    flags: { org: str, user: str },
    build: (v) => ({ op: "legacyKey", input: { org: v["org"], user: v["user"] } as OpInput<Keys, "legacyKey"> }),
  },
  "issue-token": {
    usage: 'issue-token --org ID --user ID --scopes "a b" [--ttl S]',
    flags: { org: str, user: str, scopes: str, ttl: str },
    build: (v) => ({
      op: "issueToken",
      input: { org: v["org"], user: v["user"], scopes: (v["scopes"] ?? "").split(/\s+/).filter(Boolean), ttl: num(v["ttl"], "ttl") } as OpInput<
        Keys,
        "issueToken"
      >,
    }),
  },
};

export function usage(): string {
  return ["usage: npm run admin -- <command> [flags] [--json]", "", ...Object.values(COMMANDS).map((c) => `  ${c.usage}`)].join("\n");
}

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

/** Runs one command; returns the process exit code (0 ok, 1 refused by the service, 2 usage). */
export async function runCli(argv: string[], keys: () => Promise<RpcClient<Keys>>, io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  const cmd = name ? COMMANDS[name] : undefined;
  if (!cmd) {
    io.err(name && name !== "--help" && name !== "help" ? `unknown command: ${name}\n\n${usage()}` : usage());
    return name === "--help" || name === "help" ? 0 : 2;
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: rest, options: { ...cmd.flags, json: { type: "boolean" } }, strict: true, allowPositionals: false }));
  } catch (e) {
    io.err(`${(e as Error).message}\nusage: npm run admin -- ${cmd.usage}`);
    return 2;
  }
  const { json, ...flags } = values;
  let built: ReturnType<Command["build"]>;
  try {
    built = cmd.build(flags as Record<string, string | undefined>);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.err(`${e.message}\nusage: npm run admin -- ${cmd.usage}`);
    return 2;
  }
  const { op, input } = built;
  const ctx: RpcContext = systemContext(`admin_${randomUUID()}`);
  try {
    const result = await (await keys()).call(op, input, ctx);
    if (json) io.out(JSON.stringify(result));
    else for (const [k, v] of Object.entries(result as Record<string, unknown>)) io.out(`${k}: ${typeof v === "object" ? JSON.stringify(v) : String(v)}`);
    return 0;
  } catch (e) {
    if (!isAppError(e)) throw e;
    // Field pointers name RPC fields (max_file_size); show them as the flags a person typed.
    const fields = (e.errors ?? []).map((f) => `  --${f.pointer.replace(/^\//, "").split("/")[0]?.replace(/_/g, "-")}: ${f.message}`);
    if (json) io.out(JSON.stringify({ error: { code: e.code, detail: e.detail, errors: e.errors ?? [] } }));
    io.err([`error (${e.code}): ${e.detail}`, ...fields].join("\n"));
    return 1;
  }
}
