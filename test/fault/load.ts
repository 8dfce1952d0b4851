/**
 * Mixed load and its verification, shared by the fault suite (issue 9).
 *
 *   const tenants = await prepareLoadTenants(stack, 2);
 *   const load = startMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants, clients: 16, durationMs: 12_000 });
 *   // … kill and restart things while it runs …
 *   const result = await load.done;                      // every request answered (or abandoned)
 *   const report = await verify(stack, result, { label: "kill -9 tasks#0" });
 *   expect(report.problems).toEqual([]);
 *
 * The load: `clients` concurrent loops over every gateway doing every kind of write at once (task
 * creates, PATCHes, dependency links, board plans, project creates, API-key creates) mixed with
 * reads. Every write carries its own Idempotency-Key and is retried, same request and same key,
 * on 5xx, 429, 409 idempotency_in_progress, network errors and timeouts (growing jittered backoff,
 * each attempt on the next gateway as a load balancer would) until a definitive answer (2xx or
 * another 4xx) or its deadline. Every write is recorded with its key, its answer and what it
 * returned; every attempt is kept on a timeline (for recovery times).
 *
 * The verification reads the run's database (schemas tasks, boards, keys) and the whole JetStream
 * stream `<ns>_task_events`, and compares, per kind of write: acknowledged vs stored, lost
 * (acknowledged but absent or stored differently, e.g. its T-number now names another task),
 * duplicated (one request stored twice), refused-but-stored and unexplained rows; events (exactly
 * one per stored change, no event without one, no repeated event id); T-numbers gap-free per
 * organization; the stored dependency graph acyclic. Every write's payload names its key (titles
 * and names are `load <key>`), which is how a stored row is traced back to its request; so the
 * tenants of a verification must be written only by the loads it is given (combineResults).
 *
 * Kinds of write and what "stored" means for each:
 * - task.create: the task's first version (seq 1) carries the title, status, priority and project
 *   the request asked for, under the T-number it was acknowledged with.
 * - task.patch: a version of that task shows the PATCH's title, status and priority, with the
 *   acknowledged updated_at. One in ten names a missing project and must be refused (400).
 * - dependency.add: the link is stored (201 new, 200 already there; 409 dependency_cycle is a
 *   correct refusal). Half the links go among a tenant's first ten tasks, where loops are common.
 * - board.plan: the acknowledged entry id is stored on that day and section (each task is planned
 *   once; one plan in five repeats an acknowledged one and must be refused with 400).
 * - project.create, api_key.create: the acknowledged id is stored under the requested name.
 */
import { randomBytes } from "node:crypto";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { TaskEvent, taskEventsStream } from "@tasksvc/contracts";
import { eventually, factories, type StackInfo } from "@tasksvc/testing";
import postgres from "postgres";

// ---------------------------------------------------------------------------------------------
// Types

export const WRITE_KINDS = ["task.create", "task.patch", "dependency.add", "board.plan", "project.create", "api_key.create"] as const;
export type WriteKind = (typeof WRITE_KINDS)[number];
export type LoadKind = WriteKind | "read";

/** An organization the load writes to, through its owner's key (every scope). */
export interface LoadTenant {
  organizationId: string;
  userId: string;
  apiKey: string;
}

export interface MixedLoadOptions {
  gatewayUrls: string[];
  tenants: LoadTenant[];
  /** Concurrent client loops (each waits for its request's definitive answer before the next). */
  clients: number;
  /** How long new requests are issued; requests in flight then still run to their answer. */
  durationMs: number;
  /** An upper bound on writes issued (whichever of this and durationMs comes first). */
  maxWrites?: number;
  /** Relative weights of each kind (defaults: DEFAULT_MIX). */
  mix?: Partial<Record<LoadKind, number>>;
  /** Per-request deadline from its first attempt: past it the request is abandoned. Default 45 s. */
  requestDeadlineMs?: number;
  /** One attempt's timeout (then retried). Default 10 s. */
  attemptTimeoutMs?: number;
}

/** How a write ended: acknowledged (2xx), refused (a definitive 4xx), abandoned (deadline). */
export type Outcome = "acknowledged" | "refused" | "abandoned";

export interface WriteRecord {
  kind: WriteKind;
  tenant: number;
  idempotencyKey: string;
  method: "POST" | "PATCH";
  path: string;
  body: Record<string, unknown>;
  /**
   * Set on requests the load makes to be refused (a board plan of a task already on that
   * section, a PATCH naming a project that does not exist): their 4xx is the right answer, and
   * the transaction that refuses them rolls back, which is what exposed finding 1 of issue 9.
   */
  meantToFail?: true;
  outcome: Outcome;
  /** The definitive status (0 when abandoned). */
  status: number;
  /** Error code of a refusal (problem+json `code`). */
  code?: string;
  /** The parsed 2xx body: a Task, a DependencyView, a BoardEntry, a Project, a CreatedApiKey. */
  response?: Record<string, unknown>;
  attempts: number;
  startedAt: number;
  endedAt: number;
}

/** One HTTP attempt. status: the HTTP status, 0 for a network error, -1 for a timeout. */
export interface Attempt {
  kind: LoadKind;
  gateway: number;
  start: number;
  end: number;
  status: number;
  /** The answer settles the request (2xx, or a 4xx other than 409 in progress and 429). */
  definitive: boolean;
}

export interface LoadResult {
  tenants: LoadTenant[];
  gatewayUrls: string[];
  writes: WriteRecord[];
  attempts: Attempt[];
  /**
   * Reads: `missing` counts GETs of an acknowledged task answered 404 (tasks are never deleted,
   * so an acknowledged task must be readable at once, from any replica).
   */
  reads: { ok: number; failed: number; missing: number; missingSamples: string[] };
  /** Every 5xx answer seen (retried attempts included), by "status code", with a few bodies. */
  serverErrors: { total: number; byCode: Record<string, number>; samples: string[] };
  /** Writes that saw at least one 5xx before their definitive answer. */
  writesWith5xx: number;
  startedAt: number;
  endedAt: number;
}

export interface LoadProgress {
  issued: number;
  acknowledged: number;
  refused: number;
  abandoned: number;
  inFlight: number;
  attempts: number;
  /** Attempts that must be retried (5xx, 429, in progress, network, timeout). */
  failedAttempts: number;
}

export interface AttemptFilter {
  kinds?: readonly LoadKind[];
  gateway?: number;
}

export interface MixedLoad {
  /** Resolves once issuing stopped and every request got its definitive answer or deadline. */
  readonly done: Promise<LoadResult>;
  /** Stops issuing new requests now (those in flight still run to their answer). */
  stop(): void;
  progress(): LoadProgress;
  /** The timeline so far (live array). */
  readonly attempts: readonly Attempt[];
  /**
   * Resolves with the end time (epoch ms) of the first 2xx attempt matching `filter` that started
   * at or after `since`; rejects after `timeoutMs`.
   */
  firstSuccess(since: number, filter?: AttemptFilter, timeoutMs?: number): Promise<number>;
}

/** Default weights: creates first (everything else needs tasks), then PATCHes and the rest. */
export const DEFAULT_MIX: Record<LoadKind, number> = {
  "task.create": 34,
  "task.patch": 24,
  "dependency.add": 10,
  "board.plan": 8,
  "project.create": 3,
  "api_key.create": 3,
  read: 18,
};

const STATUSES = ["TODO", "IN_PROGRESS", "IN_REVIEW", "COMPLETED", "BLOCKED"] as const;
const PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;
const SECTIONS = ["TODO", "PROGRESS"] as const;
/** Board plans use days from here; each task is planned once, so no plan moves another. */
const PLAN_DAY0 = Date.UTC(2026, 10, 23);
const PLAN_DAYS = 5;
const planDate = (i: number) => new Date(PLAN_DAY0 + (i % PLAN_DAYS) * 86_400_000).toISOString().slice(0, 10);

const title = (key: string) => `load ${key}`;
const keyOf = (text: string | null | undefined): string | undefined => (text?.startsWith("load ") ? text.slice(5) : undefined);
const pick = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)] as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Tenants

/**
 * Organizations for a load, made through the admin operations (as the CLI does), with burst and
 * quota raised far above what a run sends: a 429 is a refusal before execution, not what these
 * tests measure.
 */
export async function prepareLoadTenants(stack: Pick<StackInfo, "natsUrl" | "namespace">, count = 2): Promise<LoadTenant[]> {
  const f = factories({ ...stack, gatewayUrls: [], databaseUrl: "" });
  try {
    const out: LoadTenant[] = [];
    for (let i = 0; i < count; i++) {
      const t = await f.tenant("team");
      await f.admin("setLimits", { org: t.organizationId, burst: 1_000_000, quota: 100_000_000 });
      out.push({ organizationId: t.organizationId, userId: t.userId, apiKey: t.apiKey });
    }
    return out;
  } finally {
    await f.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The load

interface TenantState {
  tasks: string[];
  projects: string[];
  /** Tasks already chosen for a board plan (each task is planned at most once). */
  planned: Set<string>;
  plans: number;
  /** Acknowledged plans, which a conflicting plan repeats on purpose. */
  placed: Array<{ date: string; task_id: string; section: string }>;
}

/** Starts the load; see MixedLoad. `runMixedLoad` is the same, awaited. */
export function startMixedLoad(opts: MixedLoadOptions): MixedLoad {
  if (opts.gatewayUrls.length === 0) throw new Error("startMixedLoad: no gateway");
  if (opts.tenants.length === 0) throw new Error("startMixedLoad: no tenant");
  const mix = { ...DEFAULT_MIX, ...(opts.mix ?? {}) };
  const mixTotal = Object.values(mix).reduce((a, b) => a + b, 0);
  const deadlineMs = opts.requestDeadlineMs ?? 45_000;
  const attemptTimeoutMs = opts.attemptTimeoutMs ?? 10_000;
  const run = randomBytes(3).toString("hex");
  const states: TenantState[] = opts.tenants.map(() => ({ tasks: [], projects: [], planned: new Set(), plans: 0, placed: [] }));

  const writes: WriteRecord[] = [];
  const attempts: Attempt[] = [];
  const reads = { ok: 0, failed: 0, missing: 0, missingSamples: [] as string[] };
  const serverErrors = { total: 0, byCode: {} as Record<string, number>, samples: [] as string[] };
  let writesWith5xx = 0;
  let inFlight = 0;
  let failedAttempts = 0;
  let nextGateway = 0;
  let stopping = false;
  const startedAt = Date.now();
  const endAt = startedAt + opts.durationMs;
  const waiters = new Set<{ since: number; filter: AttemptFilter; resolve: (t: number) => void }>();

  const matches = (a: Attempt, f: AttemptFilter) => (f.kinds === undefined || f.kinds.includes(a.kind)) && (f.gateway === undefined || f.gateway === a.gateway);

  function note(a: Attempt, text: string): void {
    attempts.push(a);
    if (!a.definitive) failedAttempts++;
    if (a.status >= 500) {
      serverErrors.total++;
      let code = "";
      try {
        code = String((JSON.parse(text) as { code?: unknown }).code ?? "");
      } catch {
        // not JSON
      }
      const k = `${a.status} ${code}`.trim();
      serverErrors.byCode[k] = (serverErrors.byCode[k] ?? 0) + 1;
      if (serverErrors.samples.length < 5) serverErrors.samples.push(`${a.kind}: ${text.slice(0, 300)}`);
    }
    if (a.status >= 200 && a.status < 300) {
      for (const w of waiters) {
        if (a.start >= w.since && matches(a, w.filter)) {
          waiters.delete(w);
          w.resolve(a.end);
        }
      }
    }
  }

  /** One HTTP exchange; never throws. */
  async function attempt(kind: LoadKind, tenant: number, method: string, path: string, body: string | undefined, key: string | undefined) {
    const gateway = nextGateway++ % opts.gatewayUrls.length;
    const headers: Record<string, string> = { authorization: `Bearer ${opts.tenants[tenant]?.apiKey ?? ""}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (key !== undefined) headers["idempotency-key"] = key;
    const start = Date.now();
    let status: number;
    let text = "";
    try {
      const res = await fetch(`${opts.gatewayUrls[gateway]}${path}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(attemptTimeoutMs),
      });
      text = await res.text();
      status = res.status;
    } catch (e) {
      status = (e as { name?: string }).name === "TimeoutError" ? -1 : 0;
    }
    let code: string | undefined;
    if (status >= 400) {
      try {
        code = (JSON.parse(text) as { code?: string }).code;
      } catch {
        code = undefined;
      }
    }
    const definitive = status >= 200 && status < 500 && status !== 429 && !(status === 409 && code === "idempotency_in_progress");
    note({ kind, gateway, start, end: Date.now(), status, definitive }, text);
    return { status, text, code, definitive };
  }

  async function write(
    kind: WriteKind,
    tenant: number,
    method: "POST" | "PATCH",
    path: string,
    body: Record<string, unknown>,
    key: string,
    meantToFail = false,
  ): Promise<WriteRecord> {
    const raw = JSON.stringify(body);
    const rec: WriteRecord = {
      kind,
      tenant,
      idempotencyKey: key,
      method,
      path,
      body,
      outcome: "abandoned",
      status: 0,
      attempts: 0,
      startedAt: Date.now(),
      endedAt: 0,
    };
    if (meantToFail) rec.meantToFail = true;
    writes.push(rec);
    inFlight++;
    let saw5xx = false;
    try {
      for (;;) {
        rec.attempts++;
        const a = await attempt(kind, tenant, method, path, raw, key);
        if (a.status >= 500) saw5xx = true;
        if (a.definitive) {
          rec.status = a.status;
          if (a.status < 300) {
            rec.outcome = "acknowledged";
            rec.response = JSON.parse(a.text) as Record<string, unknown>;
          } else {
            rec.outcome = "refused";
            if (a.code !== undefined) rec.code = a.code;
          }
          return rec;
        }
        if (Date.now() - rec.startedAt > deadlineMs) return rec;
        // Growing, jittered, capped at 1 s: many clients retrying after a crash do not stampede.
        await sleep(Math.min(1000, 20 * 2 ** Math.min(rec.attempts, 6)) * (0.5 + Math.random()));
      }
    } finally {
      rec.endedAt = Date.now();
      inFlight--;
      if (saw5xx) writesWith5xx++;
    }
  }

  async function read(tenant: number): Promise<void> {
    const s = states[tenant] as TenantState;
    const task = s.tasks.length ? pick(s.tasks) : undefined;
    const paths = [
      task ? `/v1/tasks/${task}` : "/v1/tasks?limit=10",
      "/v1/tasks?limit=20",
      `/v1/daily-plan?date=${planDate(Math.floor(Math.random() * PLAN_DAYS))}`,
      "/v1/projects?limit=10",
      "/v1/api-keys?limit=5",
    ];
    const path = pick(paths);
    const a = await attempt("read", tenant, "GET", path, undefined, undefined);
    if (a.status === 200) reads.ok++;
    else reads.failed++;
    if (task && path === `/v1/tasks/${task}` && a.status === 404) {
      reads.missing++;
      if (reads.missingSamples.length < 3) reads.missingSamples.push(`GET ${path} → 404 ${a.text.slice(0, 200)}`);
    }
  }

  function chooseKind(s: TenantState): LoadKind {
    let r = Math.random() * mixTotal;
    let kind: LoadKind = "task.create";
    for (const [k, w] of Object.entries(mix) as Array<[LoadKind, number]>) {
      if (r < w) {
        kind = k;
        break;
      }
      r -= w;
    }
    // Writes that need tasks wait for a few to exist.
    if ((kind === "task.patch" || kind === "board.plan") && s.tasks.length < 1) return "task.create";
    if (kind === "dependency.add" && s.tasks.length < 2) return "task.create";
    if (kind === "board.plan" && s.planned.size >= s.tasks.length) return "task.patch";
    return kind;
  }

  async function client(index: number): Promise<void> {
    const tenant = index % opts.tenants.length;
    const s = states[tenant] as TenantState;
    let seq = 0;
    while (!stopping && Date.now() < endAt) {
      if (opts.maxWrites !== undefined && writes.length >= opts.maxWrites) break;
      const kind = chooseKind(s);
      if (kind === "read") {
        await read(tenant);
        continue;
      }
      const key = `${run}.${index}.${++seq}`;
      switch (kind) {
        case "task.create": {
          const body: Record<string, unknown> = { title: title(key), priority: pick(PRIORITIES) };
          if (Math.random() < 0.3) body["status"] = pick(STATUSES);
          if (s.projects.length && Math.random() < 0.3) body["project_id"] = pick(s.projects);
          const r = await write(kind, tenant, "POST", "/v1/tasks", body, key);
          if (r.outcome === "acknowledged") s.tasks.push(String(r.response?.["id"]));
          break;
        }
        case "task.patch": {
          // The title names the PATCH's key, so every PATCH is a change of its own (a new version).
          const body: Record<string, unknown> = { title: title(key) };
          if (Math.random() < 0.5) body["status"] = pick(STATUSES);
          if (Math.random() < 0.5) body["priority"] = pick(PRIORITIES);
          // One in ten names a project that does not exist: 400, and its transaction rolls back.
          const bad = Math.random() < 0.1;
          if (bad) body["project_ids"] = [`prj_missing_${key}`];
          await write(kind, tenant, "PATCH", `/v1/tasks/${pick(s.tasks)}`, body, key, bad);
          break;
        }
        case "dependency.add": {
          // Half the links among the first ten tasks, whose graph fills up: there a new link is
          // often already there (200) or would close a loop (409, and a rollback).
          const pool = Math.random() < 0.5 ? s.tasks.slice(0, 10) : s.tasks;
          if (pool.length < 2) continue;
          const blocked = pick(pool);
          let blocker = pick(pool);
          while (blocker === blocked) blocker = pick(pool);
          await write(kind, tenant, "POST", `/v1/tasks/${blocked}/dependencies`, { blocker_task_id: blocker }, key);
          break;
        }
        case "board.plan": {
          // One in five repeats an acknowledged plan: 400 "already on that section", a rollback.
          if (s.placed.length && Math.random() < 0.2) {
            await write(kind, tenant, "POST", "/v1/daily-plan/entries", { ...pick(s.placed) }, key, true);
            break;
          }
          const free = s.tasks.filter((t) => !s.planned.has(t));
          const task = pick(free);
          s.planned.add(task);
          const body = { date: planDate(s.plans++), task_id: task, section: pick(SECTIONS) };
          const r = await write(kind, tenant, "POST", "/v1/daily-plan/entries", body, key);
          if (r.outcome === "acknowledged") s.placed.push(body);
          break;
        }
        case "project.create": {
          const r = await write(kind, tenant, "POST", "/v1/projects", { name: title(key) }, key);
          if (r.outcome === "acknowledged") s.projects.push(String(r.response?.["id"]));
          break;
        }
        case "api_key.create": {
          // Past the organization's 100 live keys, 409 limit_reached: a right answer (verify).
          await write(kind, tenant, "POST", "/v1/api-keys", { name: title(key), scopes: ["tasks:read"], expires_in_days: 1 }, key);
          break;
        }
      }
    }
  }

  const done = Promise.all(Array.from({ length: opts.clients }, (_, i) => client(i))).then((): LoadResult => {
    stopping = true;
    return { tenants: opts.tenants, gatewayUrls: opts.gatewayUrls, writes, attempts, reads, serverErrors, writesWith5xx, startedAt, endedAt: Date.now() };
  });

  return {
    done,
    attempts,
    stop() {
      stopping = true;
    },
    progress(): LoadProgress {
      const count = (o: Outcome) => writes.filter((w) => w.outcome === o && w.endedAt > 0).length;
      return {
        issued: writes.length,
        acknowledged: count("acknowledged"),
        refused: count("refused"),
        abandoned: count("abandoned"),
        inFlight,
        attempts: attempts.length,
        failedAttempts,
      };
    },
    firstSuccess(since: number, filter: AttemptFilter = {}, timeoutMs = 60_000): Promise<number> {
      const hit = attempts.find((a) => a.start >= since && a.status >= 200 && a.status < 300 && matches(a, filter));
      if (hit) return Promise.resolve(hit.end);
      return new Promise((resolve, reject) => {
        const w = {
          since,
          filter,
          resolve: (t: number) => {
            clearTimeout(timer);
            resolve(t);
          },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`no successful ${JSON.stringify(filter)} request started after ${new Date(since).toISOString()} within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
  };
}

/** Runs a load to its end (see startMixedLoad). */
export function runMixedLoad(opts: MixedLoadOptions): Promise<LoadResult> {
  return startMixedLoad(opts).done;
}

/**
 * Several loads as one result, for verify() when loads ran one after another (or at once) on the
 * same tenants: verify() explains every stored row of its tenants by the writes it is given.
 */
export function combineResults(results: LoadResult[]): LoadResult {
  const first = results[0];
  if (!first) throw new Error("combineResults: no result");
  const tenants = [...first.tenants];
  const writes: WriteRecord[] = [];
  for (const r of results) {
    // Tenant indexes are per load: map them onto the combined list.
    const index = r.tenants.map((t) => {
      const i = tenants.findIndex((x) => x.organizationId === t.organizationId);
      if (i >= 0) return i;
      tenants.push(t);
      return tenants.length - 1;
    });
    for (const w of r.writes) writes.push({ ...w, tenant: index[w.tenant] ?? w.tenant });
  }
  const byCode: Record<string, number> = {};
  for (const r of results) for (const [k, n] of Object.entries(r.serverErrors.byCode)) byCode[k] = (byCode[k] ?? 0) + n;
  const sum = (f: (r: LoadResult) => number) => results.reduce((a, r) => a + f(r), 0);
  return {
    tenants,
    gatewayUrls: [...new Set(results.flatMap((r) => r.gatewayUrls))],
    writes,
    attempts: results.flatMap((r) => r.attempts).sort((a, b) => a.start - b.start),
    reads: {
      ok: sum((r) => r.reads.ok),
      failed: sum((r) => r.reads.failed),
      missing: sum((r) => r.reads.missing),
      missingSamples: results.flatMap((r) => r.reads.missingSamples),
    },
    serverErrors: { total: sum((r) => r.serverErrors.total), byCode, samples: results.flatMap((r) => r.serverErrors.samples).slice(0, 5) },
    writesWith5xx: sum((r) => r.writesWith5xx),
    startedAt: Math.min(...results.map((r) => r.startedAt)),
    endedAt: Math.max(...results.map((r) => r.endedAt)),
  };
}

/**
 * How long requests of `filter` kept failing after `since` (the end of the last failed attempt
 * that ended after it, minus `since`; 0 when none failed), and how many such attempts failed.
 */
export function failureWindow(result: { readonly attempts: readonly Attempt[] }, since: number, filter: AttemptFilter = {}): { ms: number; failures: number } {
  let last = since;
  let failures = 0;
  for (const a of result.attempts) {
    if (a.end < since || a.definitive) continue;
    if ((filter.kinds && !filter.kinds.includes(a.kind)) || (filter.gateway !== undefined && filter.gateway !== a.gateway)) continue;
    failures++;
    last = Math.max(last, a.end);
  }
  return { ms: last - since, failures };
}

/** Write attempts matching `filter` that were in flight at `t` (a crash at `t` caught them). */
export function inFlightAt(result: { readonly attempts: readonly Attempt[] }, t: number, filter: AttemptFilter = {}): number {
  return result.attempts.filter(
    (a) =>
      a.kind !== "read" &&
      a.start <= t &&
      a.end >= t &&
      (filter.kinds === undefined || filter.kinds.includes(a.kind)) &&
      (filter.gateway === undefined || filter.gateway === a.gateway),
  ).length;
}

// ---------------------------------------------------------------------------------------------
// Verification

export interface KindFigures {
  kind: WriteKind;
  issued: number;
  acknowledged: number;
  /** Definitive 4xx answers (expected ones included, e.g. 409 dependency_cycle). */
  refused: number;
  abandoned: number;
  /** Acknowledged writes found stored as acknowledged. */
  stored: number;
  /** Acknowledged but absent, or stored differently (e.g. its T-number now names another task). */
  lost: number;
  /** Extra rows (or events) for one request. */
  duplicated: number;
  /**
   * Answers that are wrong whatever is stored: a 4xx the load never provokes (e.g. a re-execution
   * answered "already there"), or a 2xx for a request made to be refused.
   */
  wrongAnswers: number;
  /** Stored rows whose request was refused, or that no request of the load explains. */
  unexplained: number;
}

export interface EventFigures {
  /** task.created per task + one task.updated per later version + one per dependency link. */
  expected: number;
  /** Events of the load's organizations in the stream. */
  stored: number;
  missing: number;
  /** Events beyond one per stored change, and events that match no stored change. */
  extra: number;
  duplicateIds: number;
  /** Rows still waiting in tasks.outbox when the stream was read. */
  outboxLeft: number;
}

export interface VerifyReport {
  label: string;
  kinds: KindFigures[];
  events: EventFigures;
  numbering: { organizations: number; tasks: number; gaps: number; duplicates: number; counterMismatches: number };
  dependencyCycles: number;
  /** Service idempotency records whose stored result no longer matches what is stored. */
  staleReplays: number;
  serverErrors: LoadResult["serverErrors"];
  writesWith5xx: number;
  /** Every non-zero failure figure as a sentence, with examples: a clean run has none. */
  problems: string[];
}

export interface VerifyOptions {
  label?: string;
  /** How long to wait for the outbox to drain into the stream. Default 30 s. */
  settleTimeoutMs?: number;
  /** Print the figures (default true). */
  print?: boolean;
}

interface VersionRow {
  organization_id: string;
  task_number: string;
  seq: number;
  title: string;
  status: string;
  priority: string | null;
  project_ids: string[];
  created_at: Date;
}
/** A task event as stored in the stream, parsed with its contract. */
export type EventMsg = TaskEvent;

/** Compares what the load was told with what the database and the event stream hold. */
export async function verify(
  target: Pick<StackInfo, "databaseUrl" | "natsUrl" | "namespace">,
  result: LoadResult,
  opts: VerifyOptions = {},
): Promise<VerifyReport> {
  const label = opts.label ?? "mixed load";
  const orgs = result.tenants.map((t) => t.organizationId);
  const orgOf = (tenant: number) => result.tenants[tenant]?.organizationId ?? "";
  const problems: string[] = [];
  const problem = (what: string, n: number, examples: string[]) => {
    if (n > 0) problems.push(`${label}: ${what}: ${n}${examples.length ? ` (e.g. ${examples.slice(0, 3).join("; ")})` : ""}`);
  };

  const sql = postgres(target.databaseUrl, { max: 2, onnotice: () => {} });
  let outboxLeft = 0;
  try {
    // The relay publishes asynchronously: wait for the outbox to drain before reading the stream.
    // A database that is still starting (a restart test) or full of clients is asked again, and
    // thrown only when it still is at the deadline; any other failure is thrown at once. Rows
    // left at the deadline are reported below.
    const last: { failure?: { error: unknown } } = {};
    await eventually(
      async () => {
        try {
          outboxLeft = Number((await sql`select count(*)::int as n from tasks.outbox where organization_id = any(${orgs})`)[0]?.["n"] ?? 0);
          delete last.failure;
        } catch (e) {
          last.failure = { error: e };
          const code = String((e as { code?: unknown }).code ?? "");
          if (["53300", "57P03", "ECONNREFUSED", "ECONNRESET", "CONNECTION_CLOSED", "CONNECT_TIMEOUT"].includes(code)) throw e;
          return true;
        }
        return outboxLeft === 0;
      },
      { timeoutMs: opts.settleTimeoutMs ?? 30_000, intervalMs: 100, what: "the outbox to drain" },
    ).catch(() => undefined);
    if (last.failure) throw last.failure.error;

    const tasks = await sql<{ organization_id: string; number: string; title: string }[]>`
      select organization_id, number::text as number, title from tasks.tasks where organization_id = any(${orgs})`;
    const versions = await sql<VersionRow[]>`
      select organization_id, task_number::text as task_number, seq, title, status, priority, project_ids, created_at
      from tasks.task_versions where organization_id = any(${orgs})`;
    const deps = await sql<{ organization_id: string; blocked: string; blocker: string }[]>`
      select organization_id, blocked_number::text as blocked, blocker_number::text as blocker from tasks.dependencies where organization_id = any(${orgs})`;
    const counters = await sql<{ organization_id: string; last_number: string }[]>`
      select organization_id, last_number::text as last_number from tasks.org_counters where organization_id = any(${orgs})`;
    const projects = await sql<{ id: string; organization_id: string; name: string }[]>`
      select id, organization_id, name from tasks.projects where organization_id = any(${orgs})`;
    // Service idempotency records of the load's requests (keys are unique to this load).
    const loadKeys = result.writes.map((w) => w.idempotencyKey);
    const taskRecords = await sql<{ key: string; operation: string; result: Record<string, unknown> }[]>`
      select key, operation, result from tasks.idempotency where key = any(${loadKeys})`;
    const entries = await sql<{ id: string; organization_id: string; date: string; section: string; task_number: string }[]>`
      select id, organization_id, date::text as date, section, task_number::text as task_number from boards.entries where organization_id = any(${orgs})`;
    const boardRecords = await sql<{ key: string; result: Record<string, unknown> }[]>`
      select key, result from boards.idempotency where key = any(${loadKeys})`;
    const apiKeys = await sql<{ id: string; organization_id: string; name: string | null }[]>`
      select id, organization_id, name from keys.api_keys where organization_id = any(${orgs}) and name like 'load %'`;

    const byKey = new Map(result.writes.map((w) => [w.idempotencyKey, w]));
    const figures = new Map<WriteKind, KindFigures>(
      WRITE_KINDS.map((kind) => {
        const ws = result.writes.filter((w) => w.kind === kind);
        const n = (o: Outcome) => ws.filter((w) => w.outcome === o).length;
        return [
          kind,
          {
            kind,
            issued: ws.length,
            acknowledged: n("acknowledged"),
            refused: n("refused"),
            abandoned: n("abandoned"),
            stored: 0,
            lost: 0,
            duplicated: 0,
            wrongAnswers: 0,
            unexplained: 0,
          },
        ];
      }),
    );
    const fig = (k: WriteKind) => figures.get(k) as KindFigures;
    const examples = new Map<string, string[]>();
    const ex = (what: string, s: string) => {
      const a = examples.get(what) ?? [];
      if (a.length < 3) a.push(s);
      examples.set(what, a);
    };
    /** A stored row traced to key `key` of kind `kind`: explained by an acknowledgement, or not. */
    const traceRow = (kind: WriteKind, key: string | undefined, row: string) => {
      const w = key === undefined ? undefined : byKey.get(key);
      if (w && w.kind === kind && (w.outcome === "acknowledged" || w.outcome === "abandoned")) return;
      fig(kind).unexplained++;
      ex(`${kind} unexplained`, `${row} (${w ? `request ${w.outcome} ${w.status} ${w.code ?? ""}` : "no request"})`);
    };

    // Wrong answers. Writes should succeed, except dependency links (409 dependency_cycle is a
    // correct answer) and the requests made to be refused (400 validation_failed is theirs).
    for (const w of result.writes) {
      if (w.outcome === "abandoned") continue;
      const right = w.meantToFail
        ? w.outcome === "refused" && w.status === 400 && w.code === "validation_failed"
        : w.outcome === "acknowledged" ||
          (w.kind === "dependency.add" && w.status === 409 && w.code === "dependency_cycle") ||
          // An organization holds at most 100 live keys; a load of some seconds makes more.
          (w.kind === "api_key.create" && w.status === 409 && w.code === "limit_reached");
      if (right) continue;
      fig(w.kind).wrongAnswers++;
      ex(
        `${w.kind} wrong`,
        `${w.method} ${w.path} ${JSON.stringify(w.body)} key ${w.idempotencyKey}${w.meantToFail ? " (made to be refused)" : ""} → ${w.status} ${w.code ?? ""}`,
      );
    }

    // --- tasks: creates and PATCHes, by version -------------------------------------------
    const vkey = (org: string, n: string | number) => `${org}/${n}`;
    const versionsOf = new Map<string, VersionRow[]>();
    for (const v of versions) {
      const k = vkey(v.organization_id, v.task_number);
      const a = versionsOf.get(k) ?? [];
      a.push(v);
      versionsOf.set(k, a);
    }
    const versionsByTitle = new Map<string, VersionRow[]>();
    for (const v of versions) {
      const a = versionsByTitle.get(v.title) ?? [];
      a.push(v);
      versionsByTitle.set(v.title, a);
    }
    const num = (id: unknown) => String(id).replace(/^T-/, "");

    for (const w of result.writes.filter((x) => x.kind === "task.create" && x.outcome === "acknowledged")) {
      const org = orgOf(w.tenant);
      const id = String(w.response?.["id"]);
      const first = (versionsOf.get(vkey(org, num(id))) ?? []).find((v) => v.seq === 1);
      const want = w.body;
      const same =
        first !== undefined &&
        first.title === want["title"] &&
        first.status === (want["status"] ?? "TODO") &&
        first.priority === want["priority"] &&
        JSON.stringify(first.project_ids) === JSON.stringify(want["project_id"] === undefined ? [] : [want["project_id"]]);
      if (same) fig("task.create").stored++;
      else {
        fig("task.create").lost++;
        ex(
          "task.create lost",
          `${id} acknowledged for "${String(want["title"])}" ${first ? `now holds "${first.title}" ${first.status} ${first.priority}` : "does not exist"}`,
        );
      }
    }
    for (const w of result.writes.filter((x) => x.kind === "task.patch" && x.outcome === "acknowledged")) {
      const org = orgOf(w.tenant);
      const r = w.response ?? {};
      const mine = (versionsByTitle.get(String(w.body["title"])) ?? []).filter((v) => v.organization_id === org);
      const v = mine.find(
        (x) => `T-${x.task_number}` === r["id"] && x.status === r["status"] && x.priority === r["priority"] && x.created_at.toISOString() === r["updated_at"],
      );
      if (v) fig("task.patch").stored++;
      else {
        fig("task.patch").lost++;
        ex(
          "task.patch lost",
          `${w.path} "${String(w.body["title"])}" acknowledged as ${String(r["status"])} ${String(r["priority"])} at ${String(r["updated_at"])}: stored ${mine.map((x) => `T-${x.task_number}#${x.seq} ${x.status} ${x.priority} ${x.created_at.toISOString()}`).join(", ") || "nothing"}`,
        );
      }
    }
    // Every stored version traced to its request: seq 1 to a create, later ones to a PATCH.
    const versionsPerKey = new Map<string, number>();
    for (const v of versions) {
      const key = keyOf(v.title);
      const kind: WriteKind = v.seq === 1 ? "task.create" : "task.patch";
      traceRow(kind, key, `T-${v.task_number}#${v.seq} "${v.title}"`);
      if (key !== undefined) versionsPerKey.set(`${kind}:${key}`, (versionsPerKey.get(`${kind}:${key}`) ?? 0) + 1);
    }
    for (const [k, n] of versionsPerKey) {
      if (n <= 1) continue;
      const kind = k.slice(0, k.indexOf(":")) as WriteKind;
      fig(kind).duplicated += n - 1;
      ex(`${kind} duplicated`, `${k.slice(k.indexOf(":") + 1)} stored ${n} times`);
    }

    // --- numbering ----------------------------------------------------------------------------
    const numbering = { organizations: orgs.length, tasks: tasks.length, gaps: 0, duplicates: 0, counterMismatches: 0 };
    for (const org of orgs) {
      const ns = tasks.filter((t) => t.organization_id === org).map((t) => Number(t.number));
      const distinct = new Set(ns).size;
      const max = ns.length ? Math.max(...ns) : 0;
      numbering.duplicates += ns.length - distinct;
      numbering.gaps += max - distinct;
      const last = Number(counters.find((c) => c.organization_id === org)?.last_number ?? 0);
      if (last !== max) {
        numbering.counterMismatches++;
        ex("numbering", `${org}: counter at ${last}, highest task T-${max}, ${distinct} tasks`);
      } else if (max !== distinct) ex("numbering", `${org}: highest task T-${max}, ${distinct} tasks`);
    }

    // --- dependencies -------------------------------------------------------------------------
    const depKey = (org: string, blocked: string, blocker: string) => `${org}/${blocked}<-${blocker}`;
    const storedDeps = new Set(deps.map((d) => depKey(d.organization_id, d.blocked, d.blocker)));
    const explainedDeps = new Set<string>();
    for (const w of result.writes.filter((x) => x.kind === "dependency.add")) {
      const blocked = num(w.path.split("/")[3]);
      const blocker = num(w.body["blocker_task_id"]);
      const k = depKey(orgOf(w.tenant), blocked, blocker);
      if (w.outcome === "acknowledged" || w.outcome === "abandoned") explainedDeps.add(k);
      if (w.outcome !== "acknowledged") continue;
      if (storedDeps.has(k)) fig("dependency.add").stored++;
      else {
        fig("dependency.add").lost++;
        ex("dependency.add lost", `${w.path} ← T-${blocker} acknowledged ${w.status}, not stored`);
      }
    }
    for (const k of storedDeps) {
      if (explainedDeps.has(k)) continue;
      fig("dependency.add").unexplained++;
      ex("dependency.add unexplained", k);
    }
    // The stored graph must stay acyclic (a DFS per organization).
    let dependencyCycles = 0;
    for (const org of orgs) {
      const edges = new Map<string, string[]>();
      for (const d of deps.filter((x) => x.organization_id === org)) edges.set(d.blocked, [...(edges.get(d.blocked) ?? []), d.blocker]);
      const state = new Map<string, 1 | 2>();
      const visit = (n: string): void => {
        state.set(n, 1);
        for (const m of edges.get(n) ?? []) {
          const s = state.get(m);
          if (s === 1) dependencyCycles++;
          else if (s === undefined) visit(m);
        }
        state.set(n, 2);
      };
      for (const n of edges.keys()) if (!state.has(n)) visit(n);
    }

    // --- board plans --------------------------------------------------------------------------
    const entryById = new Map(entries.map((e) => [e.id, e]));
    for (const w of result.writes.filter((x) => x.kind === "board.plan" && x.outcome === "acknowledged")) {
      const r = w.response ?? {};
      const e = entryById.get(String(r["id"]));
      const same =
        e !== undefined &&
        e.organization_id === orgOf(w.tenant) &&
        `T-${e.task_number}` === w.body["task_id"] &&
        e.section === w.body["section"] &&
        e.date === w.body["date"];
      if (same) fig("board.plan").stored++;
      else {
        fig("board.plan").lost++;
        ex(
          "board.plan lost",
          `${String(w.body["task_id"])} on ${String(w.body["date"])} ${String(w.body["section"])} acknowledged as ${String(r["id"])}: ${e ? JSON.stringify(e) : "not stored"}`,
        );
      }
    }
    // An entry is traced through the boards service's idempotency record of its request.
    const keyOfEntry = new Map(boardRecords.map((b) => [String(b.result["id"]), b.key]));
    const entriesPerTask = new Map<string, number>();
    for (const e of entries) {
      traceRow("board.plan", keyOfEntry.get(e.id), `entry ${e.id} T-${e.task_number} ${e.date} ${e.section}`);
      const k = `${e.organization_id}/${e.task_number}`;
      entriesPerTask.set(k, (entriesPerTask.get(k) ?? 0) + 1);
    }
    for (const [k, n] of entriesPerTask) {
      if (n <= 1) continue;
      // Each task is planned once by the load (no subtasks): two entries are a twin.
      fig("board.plan").duplicated += n - 1;
      ex("board.plan duplicated", `${k} has ${n} entries`);
    }

    // --- projects and API keys (names carry the key) ------------------------------------------
    const byName = <R extends { name: string | null; organization_id: string }>(rows: R[]) => {
      const m = new Map<string, R[]>();
      for (const r of rows) m.set(`${r.organization_id}/${r.name}`, [...(m.get(`${r.organization_id}/${r.name}`) ?? []), r]);
      return m;
    };
    for (const [kind, rows] of [
      ["project.create", projects],
      ["api_key.create", apiKeys],
    ] as const) {
      const named = byName<{ id: string; organization_id: string; name: string | null }>(rows);
      for (const w of result.writes.filter((x) => x.kind === kind && x.outcome === "acknowledged")) {
        const found = named.get(`${orgOf(w.tenant)}/${String(w.body["name"])}`) ?? [];
        if (found.some((r) => r.id === w.response?.["id"])) fig(kind).stored++;
        else {
          fig(kind).lost++;
          ex(
            `${kind} lost`,
            `${String(w.body["name"])} acknowledged as ${String(w.response?.["id"])}: stored ${found.map((r) => r.id).join(", ") || "nothing"}`,
          );
        }
      }
      for (const [name, rs] of named) {
        traceRow(kind, keyOf(name.slice(name.indexOf("/") + 1)), `${rs[0]?.id} ${name}`);
        if (rs.length > 1) {
          fig(kind).duplicated += rs.length - 1;
          ex(`${kind} duplicated`, `${name} stored ${rs.length} times: ${rs.map((r) => r.id).join(", ")}`);
        }
      }
    }

    // --- service idempotency records still matching what is stored ---------------------------
    let staleReplays = 0;
    for (const r of taskRecords) {
      if (r.operation !== "createTask" && r.operation !== "updateTask") continue;
      const w = byKey.get(r.key);
      if (!w) continue;
      const res = r.result;
      const mine = (versionsByTitle.get(String(res["title"])) ?? []).filter((v) => v.organization_id === orgOf(w.tenant) && `T-${v.task_number}` === res["id"]);
      if (mine.length === 0) {
        staleReplays++;
        ex("stale replays", `${r.operation} ${r.key} would replay ${String(res["id"])} "${String(res["title"])}", which is not stored`);
      }
    }

    // --- events ---------------------------------------------------------------------------------
    const events = await readTaskEvents(target);
    const mineEvents = events.filter((e) => orgs.includes(e.organization_id));
    const seenIds = new Map<string, number>();
    for (const e of mineEvents) seenIds.set(e.id, (seenIds.get(e.id) ?? 0) + 1);
    const duplicateIds = [...seenIds.values()].reduce((a, n) => a + (n - 1), 0);
    const eventsOf = new Map<string, EventMsg[]>();
    for (const e of mineEvents) {
      const k = vkey(e.organization_id, num(e.data.id));
      eventsOf.set(k, [...(eventsOf.get(k) ?? []), e]);
    }
    const depsOf = new Map<string, number>();
    for (const d of deps) depsOf.set(vkey(d.organization_id, d.blocked), (depsOf.get(vkey(d.organization_id, d.blocked)) ?? 0) + 1);
    let expected = 0;
    let missing = 0;
    let extra = 0;
    for (const t of tasks) {
      const k = vkey(t.organization_id, t.number);
      const vs = versionsOf.get(k) ?? [];
      const es = eventsOf.get(k) ?? [];
      eventsOf.delete(k);
      const created = es.filter((e) => e.type === "task.created");
      const updated = es.filter((e) => e.type === "task.updated");
      const others = es.filter((e) => e.type !== "task.created" && e.type !== "task.updated");
      const first = vs.find((v) => v.seq === 1);
      const wantUpdated = vs.length - 1 + (depsOf.get(k) ?? 0);
      expected += 1 + wantUpdated;
      // Created: exactly one, carrying the first version.
      if (created.length === 0) {
        missing++;
        ex("events missing", `T-${t.number}: no task.created`);
      } else {
        const wrong = created.filter((e) => e.data.title !== first?.title).length;
        const surplus = created.length - 1 + (wrong === created.length ? 1 : 0);
        if (surplus > 0) {
          extra += surplus;
          ex(
            "events extra",
            `T-${t.number}: task.created ×${created.length} (${created.map((e) => e.data.title).join(", ")}), first version "${first?.title}"`,
          );
        }
        if (wrong === created.length) missing++;
      }
      // Each later version has its event; each event shows a stored version; and the counts
      // agree: one task.updated per later version plus one per dependency link on the task.
      const titles = new Set(vs.map((v) => v.title));
      const unanswered = vs.filter((v) => v.seq > 1 && !updated.some((e) => e.data.title === v.title));
      for (const v of unanswered) ex("events missing", `T-${t.number}#${v.seq} "${v.title}": no task.updated`);
      const unmatched = updated.filter((e) => !titles.has(e.data.title));
      for (const e of unmatched) ex("events extra", `T-${t.number}: task.updated shows "${e.data.title}", no such version`);
      const matched = updated.length - unmatched.length;
      const miss = Math.max(unanswered.length, wantUpdated - matched);
      const surplus = matched - wantUpdated + miss;
      if (miss > unanswered.length)
        ex("events missing", `T-${t.number}: ${matched} task.updated for ${vs.length - 1} later versions + ${depsOf.get(k) ?? 0} links`);
      if (surplus > 0) ex("events extra", `T-${t.number}: ${matched} task.updated for ${vs.length - 1} later versions + ${depsOf.get(k) ?? 0} links`);
      missing += miss;
      extra += surplus + unmatched.length + others.length;
    }
    // Events of tasks that are not stored at all.
    for (const [k, es] of eventsOf) {
      extra += es.length;
      ex("events extra", `${k}: ${es.length} events, task not stored`);
    }
    const eventFigures: EventFigures = { expected, stored: mineEvents.length, missing, extra, duplicateIds, outboxLeft };

    // --- problems -------------------------------------------------------------------------------
    const kinds = [...figures.values()];
    for (const f of kinds) {
      problem(`${f.kind} abandoned (no definitive answer before the deadline)`, f.abandoned, []);
      problem(`${f.kind} lost`, f.lost, examples.get(`${f.kind} lost`) ?? []);
      problem(`${f.kind} duplicated`, f.duplicated, examples.get(`${f.kind} duplicated`) ?? []);
      problem(`${f.kind} wrong answers`, f.wrongAnswers, examples.get(`${f.kind} wrong`) ?? []);
      problem(`${f.kind} unexplained rows`, f.unexplained, examples.get(`${f.kind} unexplained`) ?? []);
    }
    problem("events missing", missing, examples.get("events missing") ?? []);
    problem("events extra", extra, examples.get("events extra") ?? []);
    problem("event ids repeated", duplicateIds, []);
    problem("outbox rows never relayed", outboxLeft, []);
    problem("T-number gaps", numbering.gaps, examples.get("numbering") ?? []);
    problem("T-numbers repeated", numbering.duplicates, []);
    problem("organization counters off", numbering.counterMismatches, examples.get("numbering") ?? []);
    problem("dependency cycles stored", dependencyCycles, []);
    problem("idempotency records replaying a write that is not stored", staleReplays, examples.get("stale replays") ?? []);
    problem("acknowledged tasks a later read did not find (404)", result.reads.missing, result.reads.missingSamples);

    const report: VerifyReport = {
      label,
      kinds,
      events: eventFigures,
      numbering,
      dependencyCycles,
      staleReplays,
      serverErrors: result.serverErrors,
      writesWith5xx: result.writesWith5xx,
      problems,
    };
    if (opts.print !== false) console.log(formatReport(report, result));
    return report;
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Every message of the run's task-event stream (an ordered consumer, read to the last one). */
export async function readTaskEvents(target: Pick<StackInfo, "natsUrl" | "namespace">): Promise<EventMsg[]> {
  const nc = await connect({ servers: target.natsUrl.split(","), name: "fault-verify" });
  try {
    const stream = taskEventsStream(target.namespace);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(stream);
    const last = info.state.last_seq;
    const out: EventMsg[] = [];
    if (info.state.messages === 0) return out;
    const consumer = await jetstream(nc).consumers.get(stream);
    let seq = 0;
    while (seq < last) {
      const batch = await consumer.fetch({ max_messages: 1000, expires: 5000 });
      let got = 0;
      for await (const m of batch) {
        got++;
        seq = m.seq;
        out.push(TaskEvent.parse(m.json()));
        if (seq >= last) break;
      }
      if (got === 0) throw new Error(`the stream ${stream} stopped at ${seq} of ${last}`);
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** The figures as a table, one row per kind of write, then events, numbering and 5xx. */
export function formatReport(r: VerifyReport, result?: LoadResult): string {
  const cols = ["kind", "issued", "acked", "refused", "abandoned", "stored", "lost", "dup", "wrong", "unexplained", "p50 ms", "p99 ms"] as const;
  // Latency of a write from its first attempt to its definitive answer (retries included).
  const pct = (kind: WriteKind, q: number) => {
    const ms = (result?.writes ?? [])
      .filter((w) => w.kind === kind)
      .map((w) => w.endedAt - w.startedAt)
      .sort((a, b) => a - b);
    return ms.length ? String(ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]) : "-";
  };
  const rows = r.kinds.map((k) =>
    [
      k.kind,
      k.issued,
      k.acknowledged,
      k.refused,
      k.abandoned,
      k.stored,
      k.lost,
      k.duplicated,
      k.wrongAnswers,
      k.unexplained,
      pct(k.kind, 0.5),
      pct(k.kind, 0.99),
    ].map(String),
  );
  const widths = cols.map((c, i) => Math.max(c.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: readonly string[]) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join("  ");
  const e = r.events;
  const duration = result
    ? ` in ${((result.endedAt - result.startedAt) / 1000).toFixed(1)} s, ${result.attempts.length} attempts, reads ${result.reads.ok} ok / ${result.reads.failed} failed / ${result.reads.missing} acknowledged task not found`
    : "";
  const acked = r.kinds.reduce((a, k) => a + k.acknowledged, 0);
  const lost = r.kinds.reduce((a, k) => a + k.lost, 0);
  const dup = r.kinds.reduce((a, k) => a + k.duplicated, 0);
  return [
    `fault: ${r.label} — acknowledged ${acked}, lost ${lost}, duplicated ${dup}, events ${e.stored}/${e.expected} (missing ${e.missing}, extra ${e.extra}, repeated ids ${e.duplicateIds}), 5xx answers ${r.serverErrors.total}${duration}`,
    line(cols),
    ...rows.map(line),
    `events: expected ${e.expected}, in stream ${e.stored}, missing ${e.missing}, extra ${e.extra}, repeated ids ${e.duplicateIds}, outbox left ${e.outboxLeft}`,
    `numbering: ${r.numbering.tasks} tasks in ${r.numbering.organizations} organizations, gaps ${r.numbering.gaps}, repeated ${r.numbering.duplicates}, counters off ${r.numbering.counterMismatches}; dependency cycles ${r.dependencyCycles}; stale idempotency replays ${r.staleReplays}`,
    `5xx answers: ${r.serverErrors.total} ${JSON.stringify(r.serverErrors.byCode)}; writes that saw a 5xx: ${r.writesWith5xx}`,
    ...(r.serverErrors.samples.length ? [`  e.g. ${r.serverErrors.samples.slice(0, 2).join("\n  e.g. ")}`] : []),
    ...(r.problems.length ? ["PROBLEMS:", ...r.problems.map((p) => `  ${p}`)] : ["no problems"]),
  ].join("\n");
}

/**
 * One request at a time of a probe after a fault, sent once with no retry, on the gateways in
 * turn: `send` answers the parsed 2xx body, or undefined with the failure noted in `failures`.
 */
export function prober(gatewayUrls: readonly string[], tenant: LoadTenant, timeoutMs: number) {
  const failures: string[] = [];
  let total = 0;
  const send = async (method: string, path: string, body?: unknown): Promise<Record<string, unknown> | undefined> => {
    const url = gatewayUrls[total % gatewayUrls.length] as string;
    total++;
    try {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${tenant.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const text = await res.text();
      if (res.status >= 300) {
        failures.push(`${method} ${path} via ${url}: ${res.status} ${text.slice(0, 200)}`);
        return undefined;
      }
      return text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch (e) {
      failures.push(`${method} ${path} via ${url}: ${String(e)}`);
      return undefined;
    }
  };
  return {
    send,
    failures,
    get total() {
      return total;
    },
  };
}
