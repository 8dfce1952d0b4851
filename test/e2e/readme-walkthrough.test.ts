import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { eventually, startStack, type StartedStack, gatewayUrl, portOf } from "@tasksvc/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assignments, type Expectation, match, type Pattern, readmeSteps, type Step, stringPattern } from "./readme-steps.js";

// The README's walkthrough, followed in order as a newcomer would, on a stack of its own started
// with the settings the README starts its stack with: every command of its ```sh blocks runs in
// bash as written, with three substitutions (this stack's gateway for localhost:8080, a free port
// for the receiver's 9000, and the ids earlier answers gave for the README's `prj_…`-style
// placeholders), and each answer must match what the README shows under the command.
const root = fileURLToPath(new URL("../..", import.meta.url));
const README = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
/** Settings that say which stack a command talks to: the test's stack has its own. */
const STACK_OWNED = new Set(["PORT", "OPS_PORT", "DATABASE_URL", "NATS_NAMESPACE", "NATS_URL"]);

const parsed = readmeSteps(README);
const makeRuns = parsed.filter((s) => assignments(s.command).program.startsWith("make run"));
const stackEnv = Object.fromEntries(makeRuns.flatMap((s) => Object.entries(assignments(s.command).env)).filter(([k]) => !STACK_OWNED.has(k)));
// `make` starts or tests the stack (this file starts its own); a command that names another
// stack's settings inline is about running a second stack beside this one.
const steps = parsed.filter((s) => {
  const { env, program } = assignments(s.command);
  return !program.startsWith("make ") && program !== "make" && !Object.keys(env).some((k) => STACK_OWNED.has(k));
});

let stack: StartedStack;
let receiverPort = 0;
const env: Record<string, string> = {};
const bound = new Map<string, string>();
const background: ChildProcess[] = [];
const receiverOutput: string[] = [];
let failedAt: Step | undefined;

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
  const port = portOf(srv);
  await new Promise((ok) => srv.close(ok));
  return port;
}

/** Addresses as this run has them: its own gateway, and a free port for the receiver. */
function located(text: string): string {
  const port = new URL(gatewayUrl(stack)).port;
  return text.replaceAll("localhost:8080", `localhost:${port}`).replaceAll("127.0.0.1:9000", `127.0.0.1:${receiverPort}`);
}
/** The command as this run types it: located, with the ids answered so far for the README's placeholders. */
function typed(text: string): string {
  let t = located(text);
  for (const [placeholder, value] of [...bound].sort((a, b) => b[0].length - a[0].length)) t = t.replaceAll(placeholder, value);
  return t;
}
/** What the README shows, located; its placeholders stay wildcards (each answer fills them anew). */
function locatedPattern(p: Pattern): Pattern {
  switch (p.kind) {
    case "string":
      return stringPattern(located(p.raw));
    case "object":
      return { kind: "object", entries: p.entries.map(([k, v]) => [k, locatedPattern(v)]) };
    case "array":
      return { ...p, items: p.items.map(locatedPattern) };
    default:
      return p;
  }
}

function shellEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env["PATH"], HOME: process.env["HOME"], NATS_URL: stack.natsUrl, NATS_NAMESPACE: stack.namespace, ...env, ...extra };
}

function run(command: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { cwd: root, env: shellEnv(), stdio: ["ignore", "pipe", "pipe"], timeout: 30_000 });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Polls `check` until it returns true; false once the deadline passes. */
const until = (check: () => boolean | Promise<boolean>, ms = 30_000): Promise<boolean> =>
  eventually(check, { timeoutMs: ms, intervalMs: 200 }).then(
    () => true,
    () => false,
  );

const MARK = "\n@@status ";
interface Answer {
  status: number;
  headers: Headers;
  body: string;
  raw: string;
}
/** Runs a curl command with its status code written after the body; `-i` answers come with headers. */
async function curl(command: string): Promise<Answer> {
  const r = await run(command.replace(/\bcurl /, `curl -w '${MARK.replace("\n", "\\n")}%{http_code}' `));
  const at = r.stdout.lastIndexOf(MARK);
  if (r.code !== 0 || at < 0) throw new Error(`exit ${r.code}: ${r.stderr}${r.stdout}`);
  let body = r.stdout.slice(0, at);
  const headers = new Headers();
  if (/^HTTP\/[\d.]+ \d{3}/.test(body)) {
    const end = body.indexOf("\r\n\r\n");
    for (const l of body.slice(0, end).split("\r\n").slice(1)) headers.append(l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim());
    body = body.slice(end + 4);
  }
  return { status: Number(r.stdout.slice(at + MARK.length)), headers, body, raw: r.stdout };
}

const json = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** undefined when the answer is what the README shows; else why not. */
function compare(e: Expectation | undefined, a: Answer): string | undefined {
  const keep = (r: ReturnType<typeof match>) => {
    if (!r.ok) return r.why;
    for (const [k, v] of r.bound) bound.set(k, v);
    return undefined;
  };
  if (!e || e.kind === "receiver") return a.status < 300 ? undefined : `status ${a.status}: ${a.body}`;
  if (e.kind === "json") return a.status < 300 ? keep(match(locatedPattern(e.pattern), json(a.body))) : `status ${a.status}: ${a.body}`;
  if (e.kind !== "http") return `a ${e.kind} expectation under a command that ends`;
  if (a.status !== e.status) return `status ${a.status}, the README shows ${e.status}: ${a.body}`;
  for (const [name, value] of e.headers) if (a.headers.get(name) !== value) return `${name}: ${a.headers.get(name)}, the README shows ${value}`;
  return e.body ? keep(match(locatedPattern(e.body), json(a.body))) : undefined;
}

const readOnly = (command: string) => /\bcurl\b/.test(command) && !/\s(-X|--data|-d)\s/.test(command);

/** Runs one README command and checks its answer; throws with the README line when it differs. */
async function follow(step: Step): Promise<void> {
  const command = typed(step.command);
  const exported = /^export ([A-Z_]+)=/.exec(command);
  if (exported?.[1]) {
    const name = exported[1];
    const r = await run(`${command}\nprintf '%s' "$${name}"`);
    env[name] = r.stdout;
    expect(r.stdout, command).not.toContain("…");
    return;
  }
  if (/^(\S+=\S+\s+)*node /.test(command)) return startBackground(step, command);
  if (/\bcurl -N\b/.test(command)) return stream(step, command);
  if (!/\bcurl\b/.test(command)) {
    const r = await run(command);
    expect(r.code, `${command}\n${r.stderr}`).toBe(0);
    if (step.expect?.kind === "json")
      expect(compare(step.expect, { status: 200, headers: new Headers(), body: r.stdout, raw: r.stdout }), command).toBeUndefined();
    return;
  }
  let why: string | undefined;
  // An answer that waits on background work (a delivery) is read again, as a reader would.
  const settled = await until(async () => {
    why = compare(step.expect, await curl(command));
    return why === undefined || !readOnly(command);
  });
  expect(settled && why === undefined, `${command}\n${why}`).toBe(true);
  if (step.expect?.kind === "receiver") {
    const { pattern } = step.expect as { pattern: Pattern & { kind: "string" } };
    const p = locatedPattern(pattern) as Pattern & { kind: "string" };
    expect(await until(() => receiverOutput.some((l) => p.re.test(l))), `the receiver printed:\n${receiverOutput.join("\n")}`).toBe(true);
  }
}

async function startBackground(step: Step, command: string): Promise<void> {
  const child = spawn("bash", ["-c", `exec env ${command}`], { cwd: root, env: shellEnv({ PORT: String(receiverPort) }), stdio: ["ignore", "pipe", "pipe"] });
  background.push(child);
  let buf = "";
  child.stdout?.on("data", (c: Buffer) => {
    buf += c.toString();
    const lines = buf.split("\n");
    buf = lines.pop() ?? "";
    receiverOutput.push(...lines);
  });
  child.stderr?.on("data", (c: Buffer) => receiverOutput.push(c.toString()));
  const e = step.expect;
  expect(e?.kind, `what does ${command} print?`).toBe("line");
  const p = locatedPattern((e as { pattern: Pattern }).pattern) as Pattern & { kind: "string" };
  expect(await until(() => receiverOutput.some((l) => p.re.test(l))), receiverOutput.join("\n")).toBe(true);
}

/** A live stream: reads its first message, compares it with the README's, then closes it. */
async function stream(step: Step, command: string): Promise<void> {
  const e = step.expect;
  expect(e?.kind, `what does ${command} show?`).toBe("sse");
  const sse = e as Expectation & { kind: "sse" };
  const child = spawn("bash", ["-c", `exec env ${command}`], { cwd: root, env: shellEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout?.on("data", (c: Buffer) => (out += c.toString()));
  try {
    const first = () =>
      out
        .split("\n\n")
        .slice(0, -1)
        .map((m) =>
          Object.fromEntries(m.split("\n").flatMap((l) => (/^(id|event|data): /.test(l) ? [[l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 2)]] : []))),
        )
        .find((m) => m["data"] !== undefined) as Record<string, string> | undefined;
    expect(await until(() => first() !== undefined), `no event came: ${out}`).toBe(true);
    const m = first() ?? {};
    if (sse.event) expect(m["event"], out).toBe(sse.event);
    for (const [field, p] of [
      ["id", sse.id],
      ["data", sse.data],
    ] as const) {
      if (!p) continue;
      const r = match(locatedPattern(p), field === "data" ? json(m[field] ?? "") : m[field]);
      expect(r.ok ? undefined : r.why, `${field}: ${out}`).toBeUndefined();
    }
  } finally {
    child.kill();
  }
}

beforeAll(async () => {
  receiverPort = await freePort();
  stack = await startStack({ env: stackEnv, replicas: { gateway: 1, keys: 1, tasks: 1, webhooks: 1 } });
}, 120_000);

afterAll(async () => {
  for (const child of background) child.kill();
  await stack?.stop();
});

describe("the README's walkthrough, followed in order", () => {
  it("when the README is read, then its walkthrough covers every section a newcomer follows, and the stack it starts relaxes the webhook guard", () => {
    const sections = new Set(steps.map((s) => s.section));
    for (const s of ["Your first key", "See a signed delivery"]) expect(sections).toContain(s);
    const shown = steps.map((s) => s.command).join("\n");
    for (const path of ["/v1/organizations", "/v1/tasks/search", "/attachments/uploads", "/v1/webhook-endpoints", "/v1/events/stream", "series_task_id"])
      expect(shown).toContain(path);
    expect(steps.filter((s) => s.expect).length).toBeGreaterThan(20);
    expect(stackEnv).toMatchObject({ WEBHOOK_ALLOW_HTTP: "true", WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  });

  for (const step of steps) {
    it(`when README line ${step.line} is run (${step.command.split("\n")[0]?.slice(0, 90)}), then it answers what the README shows`, async () => {
      expect(failedAt, `an earlier command failed (README line ${failedAt?.line})`).toBeUndefined();
      try {
        await follow(step);
      } catch (e) {
        failedAt = step;
        throw e;
      }
    }, 60_000);
  }
});
