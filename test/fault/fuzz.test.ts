import { createHash } from "node:crypto";
import { api, eventually, factories, type Tenant } from "@tasksvc/testing";
import postgres from "postgres";
import Ajv2020 from "ajv/dist/2020.js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  encodeRequest,
  operationsOf,
  requestArbitrary,
  sendRaw,
  sweepArbitraries,
  type Fixtures,
  type FuzzRequest,
  type Operation,
  type SendResult,
} from "./fuzz-arbitraries.js";
import { startProcessStack, type ProcessStack, type UnexpectedExit } from "./processes.js";

/**
 * Issue 9: a fuzz test generated from the OpenAPI document the gateway serves (GET
 * /v1/openapi.json: what docs/openapi.json commits, generated from the same zod contracts, but
 * always in step with the code under test). Every operation gets
 * requests with one slot mutated (path ids, query, headers, a body field, the whole body, the
 * framing, the method; see fuzz-arbitraries.ts), sent one at a time over raw sockets, as the owner
 * of a real tenant (so they pass auth and reach validation and the services) or, one in eight,
 * anonymously. The contract checked on every answer:
 *
 * - no 5xx. None is allowed: the stack is healthy, no fault is injected and requests go one at a
 *   time, so a 503 can only mean a service died or hung on the request, and a 500 is a bug caught
 *   at the edge. Either is what this test exists to find.
 * - an x-request-id header on every answer, never the same twice (spec section 7);
 * - every error (status >= 400) is application/problem+json whose body matches the document's
 *   Problem schema (closed, code from its enum), with status equal to the HTTP status, and on 5xx
 *   request_id equal to the header. The spec (section 7) and the Problem schema put request_id in
 *   the body of 5xx only, so a 4xx without it is within the contract (REQUEST_ID_IN_EVERY_PROBLEM
 *   would demand it everywhere);
 * - every success is JSON; on a route reached as documented, with a documented status and a body
 *   that matches the documented schema;
 * - no service process exits (each replica is its own process, so a crash is an exit we observe,
 *   not a crash of vitest); a replica that died is restarted so the run goes on and finds the rest;
 *   afterwards the stack answers ordinary requests.
 *
 * A sweep comes first: every path, query and top-level text input of every operation gets NUL, a
 * lone surrogate, CR LF and (dates) year 0000 once, on an otherwise minimal valid request, so no
 * input is left to chance; then FUZZ_RUNS random requests (2,800 by default). The run is bounded by
 * count (and by time and exits, for a tree that crashes) and reproducible: the seed is printed,
 * FUZZ_SEED replays it, FUZZ_ONLY=<n> sends only request n, FUZZ_VERBOSE=1 prints every exchange.
 */

const REQUEST_ID_IN_EVERY_PROBLEM = false;
const SEED = process.env["FUZZ_SEED"] ? Number(process.env["FUZZ_SEED"]) : 90_2026;
/** Random requests, after the sweep (about 200): about 3,000 in all. */
const RUNS = process.env["FUZZ_RUNS"] ? Number(process.env["FUZZ_RUNS"]) : 2_800;
const ONLY = process.env["FUZZ_ONLY"] ? Number(process.env["FUZZ_ONLY"]) : undefined;
const VERBOSE = process.env["FUZZ_VERBOSE"] === "1";
/**
 * Gateway → service calls give up after this; a service that dies mid-request costs one timeout.
 * Generous, so that a busy machine's stall is not taken for a fault.
 */
const RPC_TIMEOUT_MS = 8_000;
const ANSWER_TIMEOUT_MS = 15_000;
/** The gateway's default BODY_LIMIT_BYTES. */
const BODY_LIMIT_BYTES = 1_048_576;
/** Bounds for a tree that crashes often: each crash costs a gateway timeout and a restart. */
const MAX_EXITS = 12;
const SEND_BUDGET_MS = 110_000;

interface Sent {
  index: number;
  req: FuzzRequest;
  bytes: number;
  result: SendResult;
}
interface Failure {
  kind: string;
  detail: string;
  sent: Sent;
}

const header = (r: SendResult, name: string): string | undefined => (r.ok ? r.res.headers[name]?.[0] : undefined);
type Broken = Array<{ kind: string; detail: string }>;

/**
 * What breaks the contract in one answer (empty when it holds). Bodies are checked against the
 * served document itself (JSON Schema 2020-12, with ajv): problems against its Problem schema
 * (closed, with the code enum), and successes of unmutated routes against the operation's
 * documented response for that status.
 */
function contractChecker(doc: { components: unknown }, ops: Operation[]) {
  // Formats are not checked by keyword: zod emits an explicit pattern for date-times, which ajv checks.
  const ajv = new Ajv2020.default({ strict: false, allErrors: true, validateFormats: false });
  ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
  const compile = (schema: unknown) => ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')) as object);
  const problem = compile({ $ref: "#/components/schemas/Problem" });
  const successes = new Map(
    ops.map((op) => [
      op.id,
      new Map(Object.entries(op.successes).map(([status, schema]) => [Number(status), schema === undefined ? undefined : compile(schema)])),
    ]),
  );
  const streamed = new Map(ops.map((op) => [op.id, op.streams]));
  const otherMedia = new Map(ops.map((op) => [op.id, op.otherMedia]));
  const jsonErrors = new Map(ops.map((op) => [op.id, new Map(Object.entries(op.jsonErrors).map(([status, schema]) => [Number(status), compile(schema)]))]));
  const seenIds = new Set<string>();

  return function check(s: Sent): Broken {
    const r = s.result;
    if (!r.ok) return [{ kind: "no answer", detail: r.error }];
    const out: Broken = [];
    const { status } = r.res;
    if (status >= 500) out.push({ kind: "5xx", detail: `status ${status}` });
    const rid = header(r, "x-request-id");
    if (!rid) out.push({ kind: "no x-request-id", detail: `status ${status}` });
    else if (seenIds.has(rid)) out.push({ kind: "x-request-id reused", detail: rid });
    else seenIds.add(rid);
    // HEAD answers carry the headers of the GET, never a body.
    if (s.req.method === "HEAD") return out;
    const ct = header(r, "content-type") ?? "";
    const text = r.res.body.toString("utf8");
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    if (status < 400) {
      // A route reached as documented must answer as documented; a mutated method or request
      // line may reach another route (GET instead of DELETE), whose answer is only JSON.
      const asDocumented = s.req.slot !== "method" && s.req.slot !== "framing";
      const schemas = successes.get(s.req.op);
      // A documented event stream: its head is all there is to judge (the body never ends).
      if (streamed.get(s.req.op)?.includes(String(status)) && /^text\/event-stream(;|$)/.test(ct)) return out;
      // A page or a file the document describes as such (the docs page, a download): its type is all there is to judge.
      // (By base type: the document may name a charset. A mutated request line that still reached it is judged the same.)
      const base = (t: string) => t.split(";")[0]?.trim().toLowerCase() ?? "";
      if (otherMedia.get(s.req.op)?.[String(status)]?.some((t) => base(t) === base(ct))) return out;
      if (!/^application\/json(;|$)/.test(ct) || body === undefined)
        out.push({ kind: "success not JSON", detail: `status ${status}, content-type ${ct || "(none)"}` });
      else if (asDocumented && !schemas?.has(status)) out.push({ kind: "undocumented success status", detail: `status ${status}` });
      else if (asDocumented) {
        const validate = schemas?.get(status);
        if (validate && !validate(body)) out.push({ kind: "success body off the document", detail: ajv.errorsText(validate.errors).slice(0, 300) });
      }
      return out;
    }
    // A refusal the document gives a JSON shape of its own (the OAuth endpoints' errors) is judged by that shape.
    const ownShape = jsonErrors.get(s.req.op)?.get(status);
    if (ownShape && /^application\/json(;|$)/.test(ct)) {
      if (body === undefined || !ownShape(body))
        out.push({ kind: "error body off the document", detail: `status ${status}: ${ajv.errorsText(ownShape.errors).slice(0, 300)}` });
      return out;
    }
    if (!/^application\/problem\+json(;|$)/.test(ct)) {
      out.push({ kind: "not problem+json", detail: `status ${status}, content-type ${ct || "(none)"}` });
      return out;
    }
    if (body === undefined || typeof body !== "object" || body === null) {
      out.push({ kind: "problem body", detail: "does not parse as a JSON object" });
      return out;
    }
    const p = body as Record<string, unknown>;
    if (!problem(body)) out.push({ kind: "problem body", detail: `off the Problem schema: ${ajv.errorsText(problem.errors).slice(0, 300)}` });
    if (p["status"] !== status) out.push({ kind: "problem body", detail: `status ${String(p["status"])} in a ${status} answer` });
    if ((status >= 500 || REQUEST_ID_IN_EVERY_PROBLEM) && p["request_id"] !== rid)
      out.push({ kind: "problem body", detail: `request_id ${String(p["request_id"])} vs header ${rid}` });
    return out;
  };
}

/** The slot without the field or parameter name, so one bug in many fields is one failure. */
const family = (req: FuzzRequest) => `${req.slot.replace(/^(path|query)\..*/, "$1").replace(/^body\/.*/, "body field")}:${req.mutation}`;

const printable = (latin1: string, max: number) => {
  // A created API key comes back in its answer: never print one.
  const text = latin1.replace(/(svc_(?:live|test)_)[A-Za-z0-9_-]+/g, "$1<redacted>");
  const s = JSON.stringify(text.length > max ? text.slice(0, max) : text).slice(1, -1);
  return text.length > max ? `${s}… (${text.length} chars)` : s;
};

function describeRequest(s: Sent): string {
  const r = s.req;
  const lines = [
    `#${s.index} ${r.method} ${printable(r.target, 200)} ${r.version}   [${r.op}, ${r.slot}, ${r.mutation}${r.anonymous ? ", anonymous" : ""}, framing ${r.framing}]`,
  ];
  if (!r.anonymous && !r.customAuth) lines.push("    Authorization: Bearer <owner key>");
  for (const [k, v] of r.headers) lines.push(`    ${printable(k, 60)}: ${printable(v, 120)}`);
  if (r.body) lines.push(`    body (${r.body.length} bytes): ${printable(r.body.toString("utf8"), 600)}`);
  const res = s.result;
  if (res.ok) {
    lines.push(
      `  → ${res.res.status} content-type ${header(res, "content-type") ?? "(none)"}, x-request-id ${header(res, "x-request-id") ?? "(none)"}: ${printable(res.res.body.toString("utf8"), 300)}`,
    );
  } else lines.push(`  → ${res.error}; received ${res.received.length} bytes: ${printable(res.received.toString("latin1"), 200)}`);
  return lines.join("\n");
}

const pad = (s: string | number, n: number) => String(s).padEnd(n);
const padl = (s: string | number, n: number) => String(s).padStart(n);

describe("fuzz: requests generated from the OpenAPI document", () => {
  let stack: ProcessStack;
  let f: ReturnType<typeof factories>;
  let tenant: Tenant;
  let port: number;
  let ops: Operation[];
  let docHash: string;
  let check: (s: Sent) => Broken;
  let fixtures: Fixtures;

  beforeAll(async () => {
    stack = await startProcessStack({ env: { RPC_TIMEOUT_MS: String(RPC_TIMEOUT_MS), BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES) } });
    const url = stack.gatewayUrls[0] as string;
    port = Number(new URL(url).port);
    f = factories(stack);
    tenant = await f.tenant("team");
    // Thousands of calls from one key: lift the burst limit and the quota so requests get past them.
    await f.admin("setLimits", { org: tenant.organizationId, burst: 1_000_000_000, quota: 2_000_000_000 });

    const gw = api(url);
    const doc = await gw.get("/v1/openapi.json");
    expect(doc.status, doc.text).toBe(200);
    docHash = createHash("sha256").update(doc.text).digest("hex").slice(0, 12);
    ops = operationsOf(doc.body);
    check = contractChecker(doc.body as { components: unknown }, ops);

    // Real resources, so valid ids reach the services and mutated requests hit existing rows.
    const token = tenant.apiKey;
    const made = async (path: string, body: unknown) => {
      const r = await gw.post(path, body, { token });
      expect(r.status, `${path}: ${r.text}`).toBe(201);
      return r.body as { id: string };
    };
    const projectIds = [];
    for (const name of ["Fuzz A", "Fuzz B", "Fuzz C"]) projectIds.push((await made("/v1/projects", { name })).id);
    const victimProjectIds = [];
    for (const name of ["Fuzz D", "Fuzz E", "Fuzz F"]) victimProjectIds.push((await made("/v1/projects", { name })).id);
    const taskIds = [];
    for (let i = 0; i < 4; i++) taskIds.push((await made("/v1/tasks", { title: `Fuzz task ${i}`, project_id: projectIds[0] })).id);
    taskIds.push((await made("/v1/tasks", { title: "Fuzz subtask", parent_task_id: taskIds[0] })).id);
    const keyIds = [];
    for (let i = 0; i < 3; i++) keyIds.push((await made("/v1/api-keys", { name: `fuzz victim ${i}`, scopes: ["tasks:read"] })).id);
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const days = [0, 1, 2, 3, 7].map(day);
    const entryIds = [];
    for (const [i, t] of taskIds.slice(1, 3).entries())
      entryIds.push((await made("/v1/daily-plan/entries", { date: days[i], task_id: t, section: "TODO" })).id);
    // Webhook endpoints, disabled so that nothing is sent, with FAILED deliveries of two attempts
    // each (written directly: making them through real failures would take the retry schedule).
    const endpointIds: string[] = [];
    const victimEndpointIds: string[] = [];
    for (let i = 0; i < 4; i++) {
      const id = (await made("/v1/webhook-endpoints", { url: `https://hooks.example.com/fuzz/${i}` })).id;
      const off = await gw.patch(`/v1/webhook-endpoints/${id}`, { enabled: false }, { token });
      expect(off.status, off.text).toBe(200);
      (i < 2 ? endpointIds : victimEndpointIds).push(id);
    }
    const deliveryIds = ["whd_fuzz_0", "whd_fuzz_1", "whd_fuzz_2"];
    const db = postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
    try {
      for (const [i, id] of deliveryIds.entries()) {
        await db`insert into webhooks.deliveries (id, organization_id, endpoint_id, event_id, event_type, payload, state, attempt_count, next_attempt_at, last_status)
          values (${id}, ${tenant.organizationId}, ${endpointIds[0] ?? ""}, ${`evt_fuzz_${i}`}, 'task.created', ${db.json({ type: "task.created", timestamp: new Date().toISOString(), data: {} })}, 'FAILED', 2, null, 500)`;
        await db`insert into webhooks.attempts (delivery_id, attempt, attempted_at, outcome, status, error_class, duration_ms)
          values (${id}, 1, now(), 'request_failed', 500, null, 12), (${id}, 2, now(), 'request_failed', 500, null, 9)`;
      }
    } finally {
      await db.end({ timeout: 1 });
    }
    // A second version of T-1, so its history has a second page.
    const patched = await gw.patch(`/v1/tasks/${taskIds[0]}`, { title: "Fuzz task 0, renamed" }, { token });
    expect(patched.status, patched.text).toBe(200);
    const cursors: Record<string, string> = {};
    // The cursor lists: `after` and `limit` (the live event stream takes `after` too, an event id, and is no page).
    for (const op of ops.filter((o) => o.method === "GET" && o.query.some((q) => q.name === "after") && o.query.some((q) => q.name === "limit"))) {
      const path = op.template
        .replace("{task_id}", taskIds[0] ?? "")
        .replace("{endpoint_id}", endpointIds[0] ?? "")
        .replace("{delivery_id}", deliveryIds[0] ?? "");
      const page = await gw.get(`${path}?limit=1`, { token });
      expect(page.status, `${path}: ${page.text}`).toBe(200);
      if (typeof page.body.next_cursor === "string") cursors[op.template] = page.body.next_cursor;
    }
    expect(Object.keys(cursors).length, JSON.stringify(cursors)).toBeGreaterThan(0);
    fixtures = {
      organizationId: tenant.organizationId,
      taskIds,
      projectIds,
      victimProjectIds,
      keyIds,
      entryIds,
      endpointIds,
      victimEndpointIds,
      deliveryIds,
      cursors,
      days,
    };
  });

  afterAll(async () => {
    await f?.close();
    await stack?.stop();
  });

  /** Ordinary requests to each service through the gateway all succeed. */
  async function answersOrdinaryRequests(): Promise<boolean> {
    const gw = api(stack.gatewayUrls[0] as string);
    const token = tenant.apiKey;
    const rs = await Promise.all([
      gw.get("/v1/members", { token }),
      gw.get("/v1/tasks?limit=1", { token }),
      gw.get(`/v1/daily-plan?date=${fixtures.days[0]}`, { token }),
      gw.post("/v1/tasks", { title: "after the fuzz" }, { token }),
    ]);
    return rs.every((r) => r.status === 200 || r.status === 201);
  }

  it("when every operation gets mutated requests, then no answer is a 5xx, every one has x-request-id, every error is problem+json, and no service exits", async () => {
    const gen = { fixtures, port, ownerKeyLength: tenant.apiKey.length - "svc_live_".length };
    const sweep = sweepArbitraries(ops, gen).map((arb, i) => fc.sample(arb, { seed: SEED + i, numRuns: 1 })[0] as FuzzRequest);
    const requests = [...sweep, ...fc.sample(requestArbitrary(ops, gen), { seed: SEED, numRuns: RUNS })];
    console.log(
      `fuzz: seed ${SEED} (replay: FUZZ_SEED=${SEED}; one request: FUZZ_ONLY=<n>), ${ONLY === undefined ? `${sweep.length} sweep + ${RUNS} random requests` : "1 request"} over ${ops.length} operations of /v1/openapi.json (sha256 ${docHash})`,
    );

    const sent: Sent[] = [];
    const failures: Failure[] = [];
    const exits: Array<{ exit: UnexpectedExit; sent: Sent }> = [];
    let seenExits = 0;
    const started = performance.now();
    let stoppedEarly = "";
    let resetUploads = 0;
    let resent503 = 0;
    for (const [index, req] of requests.entries()) {
      if (ONLY !== undefined && index !== ONLY) continue;
      if (performance.now() - started > SEND_BUDGET_MS) {
        stoppedEarly = `the time budget of ${SEND_BUDGET_MS / 1000} s ran out at request #${index}`;
        break;
      }
      const bytes = encodeRequest(req, port, tenant.apiKey);
      let result = await sendRaw(port, bytes, ANSWER_TIMEOUT_MS, req.method === "HEAD");
      // An upload past the body limit is answered 413 at once and the connection closed; the
      // client still writing can see the reset before the answer (RFC 9112 section 9.6). curl
      // reads the 413 every time; our client does too but for a rare race, so such a request is
      // sent up to twice more before its missing answer counts.
      for (
        let attempt = 0;
        attempt < 2 && !result.ok && result.received.length === 0 && /EPIPE|ECONNRESET/.test(result.error) && bytes.length > BODY_LIMIT_BYTES;
        attempt++
      ) {
        resetUploads++;
        result = await sendRaw(port, bytes, ANSWER_TIMEOUT_MS, req.method === "HEAD");
      }
      // A 503 with every service alive is a stall (a busy machine, a checkpoint), not the answer to
      // the input: sent once more, and only a second 503 counts. A fault in the input answers alike twice.
      if (result.ok && result.res.status === 503 && stack.unexpectedExits.length === seenExits) {
        resent503++;
        result = await sendRaw(port, bytes, ANSWER_TIMEOUT_MS, req.method === "HEAD");
      }
      const s: Sent = { index, req, bytes: bytes.length, result };
      sent.push(s);
      if (VERBOSE) console.log(describeRequest(s));
      const broken = check(s);
      if (broken.length) failures.push({ kind: [...new Set(broken.map((b) => b.kind))].join(", "), detail: broken.map((b) => b.detail).join("; "), sent: s });
      if (stack.unexpectedExits.length > seenExits) {
        // Requests go one at a time and a dying service makes the gateway wait for its timeout,
        // so the exit is seen by the time this request's answer arrives.
        for (const exit of stack.unexpectedExits.slice(seenExits)) {
          exits.push({ exit, sent: s });
          stack.restart(exit.service, exit.index);
        }
        seenExits = stack.unexpectedExits.length;
        // Not stack.waitReady(): it refuses to wait once any replica has exited.
        const recovered = await eventually(answersOrdinaryRequests, {
          what: "the stack to answer again after a restart",
          timeoutMs: 30_000,
          intervalMs: 200,
        }).then(
          () => true,
          () => false,
        );
        if (!recovered) {
          stoppedEarly = `the stack did not recover after restarting ${exits.map((e) => `${e.exit.service}#${e.exit.index}`).join(", ")} at request #${index}`;
          break;
        }
        if (exits.length >= MAX_EXITS) {
          stoppedEarly = `${exits.length} service exits by request #${index}`;
          break;
        }
      }
    }
    const seconds = (performance.now() - started) / 1000;
    if (stoppedEarly) console.log(`fuzz: stopped early: ${stoppedEarly}`);

    // Figures: by status class, by operation, by slot.
    const cls = (s: Sent) => (s.result.ok ? `${Math.floor(s.result.res.status / 100)}xx` : "no answer");
    const classes = ["2xx", "3xx", "4xx", "5xx", "no answer"];
    const count = (xs: Sent[], k: string) => xs.filter((s) => cls(s) === k).length;
    const failedIdx = new Set(failures.map((x) => x.sent.index));
    console.log(
      `fuzz: sent ${sent.length} requests in ${seconds.toFixed(1)} s (${Math.round(sent.length / seconds)}/s), ${Math.round(sent.reduce((a, s) => a + s.bytes, 0) / 1024)} KiB — ` +
        `${classes.map((k) => `${k} ${count(sent, k)}`).join(", ")}; anonymous ${sent.filter((s) => s.req.anonymous).length}; ` +
        `failed ${failedIdx.size}; uploads past the limit sent again after a reset ${resetUploads}; 503s sent again ${resent503}; service exits ${exits.length}${exits.length ? ` (${exits.map((e) => `${e.exit.service}#${e.exit.index}`).join(", ")})` : ""}`,
    );
    const table = [`${pad("operation", 34)}${pad("sent", 6)}${classes.map((k) => padl(k, 10)).join("")}${padl("failed", 8)}`];
    for (const op of ops) {
      const xs = sent.filter((s) => s.req.op === op.id);
      table.push(
        `${pad(`${op.method} ${op.template}`.slice(0, 33), 34)}${pad(xs.length, 6)}${classes.map((k) => padl(count(xs, k), 10)).join("")}${padl(xs.filter((s) => failedIdx.has(s.index)).length, 8)}`,
      );
    }
    console.log(`fuzz: per operation\n${table.join("\n")}`);
    const slots = new Map<string, number>();
    for (const s of sent) slots.set(s.req.slot.split(/[./]/)[0] ?? "", (slots.get(s.req.slot.split(/[./]/)[0] ?? "") ?? 0) + 1);
    console.log(`fuzz: per mutated slot — ${[...slots].map(([k, v]) => `${k} ${v}`).join(", ")}`);

    // Distinct failures: one per kind, status and mutation family, shown with its smallest request.
    const groups = new Map<string, Failure[]>();
    for (const x of failures) {
      const status = x.sent.result.ok ? x.sent.result.res.status : "-";
      const key = `${x.kind} (${x.detail.startsWith("status") ? status : x.detail}) ← ${family(x.sent.req)}`;
      groups.set(key, [...(groups.get(key) ?? []), x]);
    }
    for (const e of exits) {
      const key = `service exit ${e.exit.service} (code ${e.exit.code}, signal ${e.exit.signal}) ← ${family(e.sent.req)}`;
      // The process's last plain-text lines (its crash), without the JSON log lines before them.
      const lines = e.exit.output.split("\n").filter((l) => l.trim() && !l.startsWith("{"));
      const thrown = lines.findLastIndex((l) => /^\S*(Error|Exception)\b/.test(l));
      const crash = lines
        .slice(thrown >= 0 ? thrown : -8)
        .slice(0, 6)
        .join("\n    ");
      groups.set(key, [...(groups.get(key) ?? []), { kind: "service exit", detail: crash, sent: e.sent }]);
    }
    const distinct = [...groups.entries()].sort(([a], [b]) => a.localeCompare(b));
    if (distinct.length) {
      console.log(`fuzz: ${distinct.length} distinct failures (seed ${SEED}); the smallest request of each:`);
      for (const [key, xs] of distinct) {
        const smallest = xs.reduce((a, b) => (b.sent.bytes < a.sent.bytes ? b : a));
        const where = [...new Set(xs.map((x) => `${x.sent.req.op} ${x.sent.req.slot}`))];
        console.log(
          `\n✗ ${key}: ${xs.length} request(s), in ${where.slice(0, 6).join("; ")}${where.length > 6 ? `; +${where.length - 6} more` : ""}\n${describeRequest(smallest.sent)}` +
            (smallest.kind === "service exit" ? `\n  service output:\n    ${smallest.detail}` : ""),
        );
      }
    }

    const healthy = await answersOrdinaryRequests();
    console.log(`fuzz: afterwards the stack ${healthy ? "answers" : "does NOT answer"} ordinary requests (seed ${SEED})`);
    expect.soft(stoppedEarly, "the run stopped early").toBe("");
    // The failures are named in the message too: a CI log's last lines show it, not the diff.
    const named = distinct.map(([key, xs]) => `${key}: ${xs.length}`);
    expect.soft(named, `distinct failures (seed ${SEED}): ${named.join("; ")}`).toEqual([]);
    expect
      .soft(
        stack.unexpectedExits.map((e) => `${e.service}#${e.index} exited (code ${e.code}, signal ${e.signal})`),
        "service exits",
      )
      .toEqual([]);
    expect(healthy, "an ordinary request after the fuzz").toBe(true);
  });
});
