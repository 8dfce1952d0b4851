import { eventually, openSse, randomWords, type SseMessage, gatewayUrl } from "@tasksvc/testing";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectClean } from "./expect-clean.js";
import { combineResults, type LoadResult, type LoadTenant, prepareLoadTenants, runMixedLoad, verify } from "./load.js";
import { type ProcessStack, startProcessStack } from "./processes.js";

/**
 * A noisy neighbour (DESIGN.md section 20, "Limits that keep tenants apart"): one organization
 * runs the worst searches the filter grammar allows, PATCHes 100,000 characters of notes that
 * escape to 6 bytes each in JSON, and resumes its event stream behind a backlog of megabytes,
 * all at once and without pause, while another organization runs the mixed load. The other's
 * run must stay clean (nothing lost or duplicated, one event per change, no 5xx) and every event
 * of both organizations must arrive; its p99 beside the hostile and alone are printed.
 *
 * Before the limits, the worst searches took every connection of the tasks service for as long as
 * they ran, one envelope over NATS's max_payload stopped every organization's events behind it,
 * and a resume behind more than 1 MiB answered 503 forever.
 */
let stack: ProcessStack;
let sql: postgres.Sql;

beforeAll(async () => {
  stack = await startProcessStack();
  sql = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await stack?.stop();
});

const CLIENTS = 10;
const DURATION_MS = 10_000;
const SEARCHERS = 3;
const MIB = 1024 * 1024;

/** Fifty negated full-text conditions: the most the filter grammar allows, each a scan of every note. */
const worstFilter = () => ({ and: Array.from({ length: 50 }, (_, i) => ({ not: { field: "text", op: "matches", value: `"${randomWords(40)}" -w${i}` } })) });

/**
 * Control characters free text keeps (docs/errors.md, Input rules) that JSON writes as `\u00XX`,
 * 6 bytes for one character; the ones with a short escape (\b \t \n \f \r) are left out. A PATCH
 * takes the next one, so each is a change with a version and an event of its own.
 */
const WORST = [...Array.from({ length: 7 }, (_, i) => i + 1), 0x0b, ...Array.from({ length: 18 }, (_, i) => i + 0x0e)].map((c) => String.fromCharCode(c));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Latency of every definitive attempt (the answer that settled its request), whole load. */
function latency(result: LoadResult): { n: number; p50: number; p99: number } {
  const ms = result.attempts
    .filter((a) => a.definitive)
    .map((a) => a.end - a.start)
    .sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? Number.NaN;
  return { n: ms.length, p50: at(0.5), p99: at(0.99) };
}

/** How many times each answer came. */
function tally(keys: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of keys) out[k] = (out[k] ?? 0) + 1;
  return out;
}

/** The organization's events in the live stream's order. */
async function streamOrder(org: string): Promise<string[]> {
  const rows = await sql<Array<{ event_id: string }>>`select event_id from tasks.event_stream where organization_id = ${org} order by stream_seq`;
  return rows.map((r) => r.event_id);
}

interface Resumed {
  /** Every message received after `after`, over every connection, in order. */
  messages: SseMessage[];
  connections: number;
  /** Opens answered 429 (its scans' share was taken by its own searches): retried after Retry-After. */
  refused: number;
}

/**
 * Resumes the organization's stream after `after` and reads it until `until` has arrived, as a
 * client does: a connection the server ends is resumed with the last id received, and an open
 * refused with 429 is tried again after its Retry-After.
 */
async function resumeUntil(url: string, tenant: LoadTenant, after: string, until: string, timeoutMs: number): Promise<Resumed> {
  const out: Resumed = { messages: [], connections: 0, refused: 0 };
  const deadline = Date.now() + timeoutMs;
  const arrived = () => out.messages.some((m) => m.id === until);
  while (!arrived()) {
    const left = deadline - Date.now();
    if (left <= 0)
      throw new Error(`the stream did not reach ${until} within ${timeoutMs} ms: ${out.messages.length} messages over ${out.connections} connections`);
    let reached: () => void = () => {};
    const got = new Promise<void>((r) => {
      reached = r;
    });
    const s = await openSse(`${url}/v1/events/stream`, {
      token: tenant.apiKey,
      lastEventId: out.messages.at(-1)?.id ?? after,
      onMessage: (m) => {
        out.messages.push(m);
        if (m.id === until) reached();
      },
    });
    if (s.status === 429) {
      out.refused++;
      // A client honours Retry-After: the pause the answer asked for, not a wait for anything.
      await sleep(1000 * Math.max(1, Number(s.headers["retry-after"] ?? 1)));
      continue;
    }
    if (s.status !== 200) throw new Error(`the resume answered ${s.status}: ${JSON.stringify(s.problem)}`);
    out.connections++;
    await Promise.race([got, s.closed(left).catch(() => undefined)]);
    s.close();
  }
  return out;
}

/**
 * The hostile organization's work, run until stopped: `SEARCHERS` loops of the worst search, one
 * loop of PATCHes with 100,000 worst-escaping characters of notes, and one loop of resumes of
 * its stream from its first event, each read until it caught up with the events published when
 * it began.
 */
function startHostile(url: string, tenant: LoadTenant, early: string, targets: string[]) {
  let stopped = false;
  const auth = { authorization: `Bearer ${tenant.apiKey}`, "content-type": "application/json" };
  const searches: Array<{ status: number; code: string | undefined }> = [];
  const patches: Array<{ status: number; id: string; version: number; text: string }> = [];
  const resumes: Array<{ messages: number; bytes: number; connections: number; refused: number; ms: number }> = [];
  /** What went wrong in the loops, kept for the test's assertions (a throw there would go unheard). */
  const problems: string[] = [];

  const code = (text: string): string | undefined => {
    try {
      return (JSON.parse(text) as { code?: string }).code;
    } catch {
      return undefined;
    }
  };
  const searcher = async () => {
    while (!stopped) {
      const res = await fetch(`${url}/v1/tasks/search`, {
        method: "POST",
        headers: auth,
        body: JSON.stringify({ filter: worstFilter(), limit: 100 }),
        signal: AbortSignal.timeout(30_000),
      }).then(
        async (r) => ({ status: r.status, text: await r.text() }),
        (e: unknown) => ({ status: 0, text: String(e) }),
      );
      searches.push({ status: res.status, code: code(res.text) });
    }
  };
  const patcher = async () => {
    for (let i = 0; !stopped; i++) {
      const id = targets[i % targets.length] as string;
      const notes = (WORST[i % WORST.length] as string).repeat(100_000);
      const res = await fetch(`${url}/v1/tasks/${id}`, {
        method: "PATCH",
        headers: auth,
        body: JSON.stringify({ notes }),
        signal: AbortSignal.timeout(30_000),
      }).then(
        async (r) => ({ status: r.status, text: await r.text() }),
        (e: unknown) => ({ status: 0, text: String(e) }),
      );
      const version = res.status === 200 ? Number((JSON.parse(res.text) as { version?: number }).version) : 0;
      patches.push({ status: res.status, id, version, text: res.status === 200 ? "" : res.text.slice(0, 300) });
    }
  };
  const resumer = async () => {
    while (!stopped) {
      const order = await streamOrder(tenant.organizationId);
      const until = order.at(-1);
      if (until === undefined || until === early) {
        problems.push("the hostile organization has no backlog to resume");
        return;
      }
      const started = Date.now();
      const r = await resumeUntil(url, tenant, early, until, 60_000).catch((e: unknown) => {
        problems.push(`a resume did not catch up: ${e instanceof Error ? e.message : String(e)}`);
        return undefined;
      });
      // One failure is the finding; resuming again at once would only repeat it.
      if (r === undefined) return;
      const want = order.slice(order.indexOf(early) + 1);
      const got = r.messages.map((m) => m.id);
      // Once each and in the stream's order, whatever connection carried it.
      if (new Set(got).size !== got.length) problems.push(`a resume received ${got.length - new Set(got).size} events twice`);
      if (got.slice(0, want.length).join() !== want.join()) problems.push(`a resume missed or reordered events: wanted ${want.length}, got ${got.length}`);
      resumes.push({
        messages: got.length,
        bytes: r.messages.reduce((a, m) => a + Buffer.byteLength(m.data), 0),
        connections: r.connections,
        refused: r.refused,
        ms: Date.now() - started,
      });
    }
  };
  const running = Promise.all([...Array.from({ length: SEARCHERS }, searcher), patcher(), resumer()]);
  return {
    searches,
    patches,
    resumes,
    problems,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

describe("a noisy neighbour", () => {
  it("when one organization runs the worst searches, PATCHes 100,000 worst-escaping characters of notes and resumes its stream behind megabytes while another runs the mixed load, then the other's run is clean and every event of both arrives (its p99 alone and beside printed)", async () => {
    const url = gatewayUrl(stack);
    const [neighbour] = await prepareLoadTenants(stack, 1);
    const [hostile] = await prepareLoadTenants(stack, 1);
    if (!neighbour || !hostile) throw new Error("no tenants");
    const headersOf = (t: LoadTenant) => ({ authorization: `Bearer ${t.apiKey}`, "content-type": "application/json" });
    const post = async (t: LoadTenant, body: unknown) => {
      const r = await fetch(`${url}/v1/tasks`, { method: "POST", headers: headersOf(t), body: JSON.stringify(body) });
      const text = await r.text();
      expect(r.status, text.slice(0, 300)).toBe(201);
      return (JSON.parse(text) as { id: string }).id;
    };

    // The hostile's data, made before either run so both meet the same database: an early
    // event to resume after, twenty tasks with 99,000-character notes for the searches to scan
    // (and over 1 MiB of events behind the early one), and two tasks its PATCHes rewrite.
    await post(hostile, { title: "before the backlog" });
    const [early] = await eventually(
      async () => {
        const order = await streamOrder(hostile.organizationId);
        return order.length === 1 && order;
      },
      { what: "the hostile's first event to be published" },
    );
    if (early === undefined) throw new Error("no early event");
    for (let i = 0; i < 20; i += 4) await Promise.all([0, 1, 2, 3].map((k) => post(hostile, { title: `heavy ${i + k}`, notes: randomWords(99_000) })));
    const targets = [await post(hostile, { title: "rewritten 0" }), await post(hostile, { title: "rewritten 1" })];
    const backlog = await eventually(
      async () => {
        const order = await streamOrder(hostile.organizationId);
        return order.length === 23 && order.slice(1);
      },
      { timeoutMs: 30_000, what: "the hostile's backlog to be published" },
    );
    const [size] = await sql<Array<{ total: number }>>`select sum(octet_length(payload::text))::int as total from tasks.events where id = any(${backlog})`;
    expect(size?.total, "the backlog behind the early event").toBeGreaterThan(MIB);

    // Alone.
    const alone = await runMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants: [neighbour], clients: CLIENTS, durationMs: DURATION_MS });
    expectClean(await verify(stack, alone, { label: `neighbour alone (${CLIENTS} clients)` }), stack.unexpectedExits);

    // Beside the hostile: its work is under way before the neighbour's load starts, and goes on
    // until that load has ended.
    const h = startHostile(url, hostile, early, targets);
    await eventually(() => h.searches.length > 0 && h.patches.length > 0, { timeoutMs: 30_000, what: "the hostile's searches and PATCHes to be answered" });
    const noisy = await runMixedLoad({ gatewayUrls: stack.gatewayUrls, tenants: [neighbour], clients: CLIENTS, durationMs: DURATION_MS });
    await h.stop();
    const a = latency(alone);
    const n = latency(noisy);
    const ratio = n.p99 / a.p99;
    const searchCounts = tally(h.searches.map((s) => `${s.status}${s.code ? ` ${s.code}` : ""}`));
    const mb = (b: number) => (b / MIB).toFixed(1);
    // The figures first, so that they show whichever assertion fails.
    console.log(
      [
        "noisy neighbour: the neighbour's definitive attempts",
        "run             attempts  p50 ms  p99 ms",
        `alone           ${String(a.n).padStart(8)}  ${String(a.p50).padStart(6)}  ${String(a.p99).padStart(6)}`,
        `beside hostile  ${String(n.n).padStart(8)}  ${String(n.p50).padStart(6)}  ${String(n.p99).padStart(6)}`,
        `p99 ratio ${ratio.toFixed(2)} (target 2)`,
        `hostile: searches ${JSON.stringify(searchCounts)}; PATCHes ${JSON.stringify(tally(h.patches.map((p) => String(p.status))))}`,
        `hostile resumes caught up: ${h.resumes.map((r) => `${r.messages} events ${mb(r.bytes)} MiB in ${r.ms} ms (${r.connections} connections, ${r.refused} refused)`).join("; ") || "none"}`,
      ].join("\n"),
    );
    expectClean(await verify(stack, combineResults([alone, noisy]), { label: `neighbour beside the hostile (${CLIENTS} clients)` }), stack.unexpectedExits);

    // Every acknowledged PATCH of the hostile has its event on its stream, and the stream holds
    // every event of the hostile once, in order (its outbox drained first: nothing left behind).
    await eventually(
      async () => {
        const [row] = await sql<Array<{ n: number }>>`select count(*)::int as n from tasks.outbox where organization_id = ${hostile.organizationId}`;
        return row?.n === 0;
      },
      { timeoutMs: 30_000, what: "the hostile's outbox to drain" },
    );
    const order = await streamOrder(hostile.organizationId);
    const all = await resumeUntil(url, hostile, early, order.at(-1) ?? early, 60_000);
    expect(all.messages.map((m) => m.id)).toEqual(order.slice(1));
    const updated = new Set(
      all.messages
        .map((m) => JSON.parse(m.data) as { type: string; data: { id: string; version?: number } })
        .filter((e) => e.type === "task.updated")
        .map((e) => `${e.data.id}@${e.data.version}`),
    );
    const acknowledged = h.patches.filter((p) => p.status === 200);
    expect(
      acknowledged.filter((p) => !updated.has(`${p.id}@${p.version}`)).map((p) => `${p.id}@${p.version}`),
      "acknowledged PATCHes with no task.updated",
    ).toEqual([]);

    // The hostile's own answers: the limits refuse it, nothing fails.
    expect(h.problems, "the hostile's resumes").toEqual([]);
    expect(
      h.patches.filter((p) => p.status !== 200).map((p) => `${p.status} ${p.text}`),
      "the hostile's PATCHes",
    ).toEqual([]);
    expect(
      Object.keys(searchCounts).filter((k) => !["200", "400 query_too_expensive", "429 rate_limited"].includes(k)),
      "the hostile's searches",
    ).toEqual([]);
    expect(h.resumes.length, "resumes caught up during the run").toBeGreaterThan(0);
    expect(stack.unexpectedExits).toEqual([]);
    // The p99 ratio is printed above, not asserted: a timing is a figure, and on two cores shared
    // by every process of the stack, the load and Postgres, it is CPU, not a limit, that sets it
    // (docs/performance.md, "A noisy neighbour").
  }, 170_000);
});
