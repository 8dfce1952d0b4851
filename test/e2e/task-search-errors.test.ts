import { type ApiResponse, e2eContext, type Tenant } from "@tasksvc/testing";
import { beforeAll, describe, expect, it } from "vitest";

// Finding tasks with bad input: every refusal is a 400 validation_failed whose pointer names the
// part that is wrong (a query parameter as /<name>, a body part as its JSON pointer), never a 500;
// the size limits of a filter tree; and the rules of cursors (a cursor is bound to everything
// else it was made with). The semantics are in task-filters.test.ts.
const { gw, f } = e2eContext();

const cond = (field: string, op: string, value: unknown) => ({ field, op, value });
const todo = cond("status", "eq", "TODO");
/** Every current task: a search names its filter. */
const current = cond("archived", "eq", false);
const pointers = (r: ApiResponse) => ((r.body?.errors ?? []) as { pointer: string }[]).map((e) => e.pointer);
function expectRefused(r: ApiResponse, pointer: string, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBe(400);
  expect(r.body.code, what).toBe("validation_failed");
  expect(r.headers.get("content-type"), what).toContain("application/problem+json");
  expect(pointers(r), `${what}: ${r.text}`).toEqual([pointer]);
}

// Refusals read nothing; one organization (with a few tasks, so that a wrongly accepted filter
// would have something to find) serves all of them.
let t: Tenant;
beforeAll(async () => {
  t = await f.tenant("team");
  for (const title of ["one", "two", "three"]) expect((await gw.post("/v1/tasks", { title }, { token: t.apiKey })).status).toBe(201);
});
const list = (query: string) => gw.get(`/v1/tasks?${query}`, { token: t.apiKey });
const search = (body: unknown) => gw.post("/v1/tasks/search", body, { token: t.apiKey });

describe("GET /v1/tasks with bad parameters", () => {
  const cases: Array<[string, string, string]> = [
    ["an unknown status", "status=DONE", "/status"],
    ["a bad status in a comma list", "status=TODO,NOPE", "/status"],
    ["a status in lower case", "status=todo", "/status"],
    ["an unknown priority", "priority=HIGH,CRITICAL", "/priority"],
    ["a created_gte that is no time", "created_gte=yesterday", "/created_gte"],
    ["a created_lt in month 13", "created_lt=2026-13-01T00:00:00Z", "/created_lt"],
    ["an updated_gte with a bad offset", "updated_gte=2026-03-01T00:00:00%2B25:00", "/updated_gte"],
    ["an updated_lt that is a number", "updated_lt=1700000000", "/updated_lt"],
    ["an impossible due_gte day", "due_gte=2026-02-30", "/due_gte"],
    ["a due_lt that is no date", "due_lt=soon", "/due_lt"],
    ["is_blocked other than true or false", "is_blocked=yes", "/is_blocked"],
    ["a q of punctuation only", `q=${encodeURIComponent('!?"-*()')}`, "/q"],
    ["a q of 201 characters", `q=${"a".repeat(201)}`, "/q"],
    ["a q with NUL", "q=a%00b", "/q"],
    ["an unknown sort key", "sort=title", "/sort"],
    ["a sort with two keys", "sort=priority,-due_date", "/sort"],
    ["a sort with a doubled minus", "sort=--priority", "/sort"],
    ["a sort with a plus", "sort=%2Bpriority", "/sort"],
    ["an unknown parameter", "state=TODO", "/state"],
    ["a limit of 101", "limit=101", "/limit"],
    ["an after that is no cursor", "after=abc", "/after"],
  ];
  for (const [what, query, pointer] of cases) {
    it(`when the query has ${what}, then 400 validation_failed at ${pointer}`, async () => {
      expectRefused(await list(query), pointer, query);
    });
  }

  it("when q is odd but has a word (unclosed quote, lone or, symbols of other query languages), then 200, never 500", async () => {
    for (const q of ['"unclosed phrase', "or", "a or or b", "-only", "(x)", "a & b | !c", "x:*", "'quoted'", "back\\slash", "- - x", '""x""', "OR AND NOT"]) {
      const r = await list(`q=${encodeURIComponent(q)}`);
      expect(r.status, `${q}: ${r.text}`).toBe(200);
    }
  });
});

describe("POST /v1/tasks/search with a bad body", () => {
  const nested = (inner: unknown) => ({ and: [todo, todo, inner] });
  const cases: Array<[string, unknown, string]> = [
    ["an unknown field", { filter: cond("owner", "eq", "me") }, "/filter/field"],
    ["no field", { filter: { op: "eq", value: "TODO" } }, "/filter/field"],
    ["an unknown op", { filter: cond("status", "like", "TODO") }, "/filter/op"],
    ["is_null on status", { filter: cond("status", "is_null", true) }, "/filter/op"],
    ["eq on created_at", { filter: cond("created_at", "eq", "2026-03-01T00:00:00Z") }, "/filter/op"],
    ["lt on title", { filter: cond("title", "lt", "m") }, "/filter/op"],
    ["contains on status", { filter: cond("status", "contains", "TO") }, "/filter/op"],
    ["matches on title", { filter: cond("title", "matches", "one") }, "/filter/op"],
    ["in on archived", { filter: cond("archived", "in", [true]) }, "/filter/op"],
    ["story_points as a string", { filter: cond("story_points", "eq", "3") }, "/filter/value"],
    ["an impossible due_date", { filter: cond("due_date", "eq", "2026-02-30") }, "/filter/value"],
    ["a due_date that is no date", { filter: cond("due_date", "lt", "tomorrow") }, "/filter/value"],
    ["a created_at that is no time", { filter: cond("created_at", "gte", "yesterday") }, "/filter/value"],
    ["an unknown status", { filter: cond("status", "eq", "DONE") }, "/filter/value"],
    ["a parent_task_id T-x", { filter: cond("parent_task_id", "eq", "T-x") }, "/filter/value"],
    ["an archived given as a string", { filter: cond("archived", "eq", "true") }, "/filter/value"],
    ["an is_null given a string", { filter: cond("priority", "is_null", "yes") }, "/filter/value"],
    ["in with an empty array", { filter: cond("status", "in", []) }, "/filter/value"],
    ["in with a single value instead of an array", { filter: cond("priority", "in", "HIGH") }, "/filter/value"],
    ["nin with a bad second item", { filter: cond("status", "nin", ["TODO", "NOPE"]) }, "/filter/value/1"],
    [
      "in with 101 items",
      {
        filter: cond(
          "story_points",
          "in",
          Array.from({ length: 101 }, (_, i) => i),
        ),
      },
      "/filter/value",
    ],
    ["eq with an array", { filter: cond("status", "eq", ["TODO"]) }, "/filter/value"],
    ["a condition without value", { filter: { field: "status", op: "eq" } }, "/filter/value"],
    ["an empty title", { filter: cond("title", "contains", "") }, "/filter/value"],
    ["a title of 501 characters (longer than any title)", { filter: cond("title", "eq", "t".repeat(501)) }, "/filter/value"],
    ["a text of punctuation only", { filter: cond("text", "matches", "!!! ???") }, "/filter/value"],
    ["a text of 201 characters", { filter: cond("text", "matches", "a".repeat(201)) }, "/filter/value"],
    ["a text with NUL", { filter: cond("text", "matches", "a\u0000b") }, "/filter/value"],
    ["an extra key in a condition", { filter: { ...todo, negate: true } }, "/filter/negate"],
    ["a key beside and", { filter: { and: [todo], or: [todo] } }, "/filter/or"],
    ["an empty and", { filter: { and: [] } }, "/filter/and"],
    ["an or that is no array", { filter: { or: todo } }, "/filter/or"],
    ["a filter that is a string", { filter: "status = TODO" }, "/filter"],
    ["a bad value third in an and", { filter: nested(cond("status", "eq", "NOPE")) }, "/filter/and/2/value"],
    ["a bad op first in an or", { filter: { or: [cond("priority", "bogus", "HIGH"), todo] } }, "/filter/or/0/op"],
    ["a bad field under not", { filter: { not: cond("colour", "eq", "red") } }, "/filter/not/field"],
    ["a bad value deep down", { filter: { and: [{ or: [todo, { not: cond("due_date", "gte", "2026-3-1") }] }] } }, "/filter/and/0/or/1/not/value"],
    ["no filter", { sort: "created_at" }, "/filter"],
    ["an unknown body key q", { filter: current, q: "one" }, "/q"],
    ["an unknown body key filters", { filter: current, filters: todo }, "/filters"],
    ["an unknown sort", { filter: current, sort: "title" }, "/sort"],
    ["a sort with two keys", { filter: current, sort: "priority,-due_date" }, "/sort"],
    ["a limit of 0", { filter: current, limit: 0 }, "/limit"],
    ["a limit of 101", { filter: current, limit: 101 }, "/limit"],
    ["an after that is no cursor", { filter: current, after: "abc" }, "/after"],
  ];
  for (const [what, body, pointer] of cases) {
    it(`when the body has ${what}, then 400 validation_failed at ${pointer}`, async () => {
      expectRefused(await search(body), pointer, JSON.stringify(body));
    });
  }

  it("when one body has several mistakes, then each is named by its pointer", async () => {
    const r = await search({ filter: { and: [cond("status", "eq", "NOPE"), cond("owner", "eq", 1), todo, { or: [cond("priority", "in", [])] }] }, sort: "x" });
    expect(r.status, r.text).toBe(400);
    expect(pointers(r).sort(), r.text).toEqual(["/filter/and/0/value", "/filter/and/1/field", "/filter/and/3/or/0/value", "/sort"].sort());
  });
});

describe("the size of a filter tree", () => {
  const many = (n: number, from = 0) => Array.from({ length: n }, (_, i) => cond("story_points", "eq", from + i));

  it("when a filter has exactly 50 conditions, then it is searched", async () => {
    const r = await search({ filter: { or: [todo, ...many(49)] } });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toHaveLength(3);
    const spread = await search({ filter: { and: [{ or: [todo, ...many(24)] }, { or: [todo, ...many(24, 100)] }] } });
    expect(spread.status, spread.text).toBe(200);
  });

  it("when 51 conditions are spread over the tree, then 400 at /filter", async () => {
    expectRefused(await search({ filter: { and: [{ or: [todo, ...many(24)] }, { or: [todo, ...many(25, 100)] }] } }), "/filter", "51 conditions");
  });

  it("when one or holds 51 conditions, then 400", async () => {
    const r = await search({ filter: { or: [todo, ...many(50)] } });
    expect(r.status, r.text).toBe(400);
    expect(r.body.code).toBe("validation_failed");
    expect(
      pointers(r).some((p) => p === "/filter" || p === "/filter/or"),
      r.text,
    ).toBe(true);
  });

  it("when a filter is 5 levels deep, then it is searched; 6 levels is 400 at the first node past the limit", async () => {
    // and > or > not > and > condition: 5 levels (a bare condition is one).
    const five = { and: [{ or: [{ not: { and: [cond("status", "neq", "TODO")] } }] }] };
    const r = await search({ filter: five });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toHaveLength(3);
    const six = { and: [{ or: [{ not: { and: [{ not: cond("status", "eq", "TODO") }] } }] }] };
    expectRefused(await search({ filter: six }), "/filter/and/0/or/0/not/and/0/not", "six levels");
    const nots = { not: { not: { not: { not: { not: todo } } } } };
    expectRefused(await search({ filter: nots }), "/filter/not/not/not/not/not", "six nots");
    expect((await search({ filter: nots.not })).status).toBe(200);
  });
});

describe("cursors of filtered lists and searches", () => {
  /** The first page (one task) of a query: its cursor, made ready for a URL or a body. */
  async function listCursor(query: string): Promise<string> {
    const r = await list(`${query}&limit=1`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.has_more, r.text).toBe(true);
    return r.body.next_cursor as string;
  }
  async function searchCursor(body: Record<string, unknown>): Promise<string> {
    const r = await search({ ...body, limit: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.has_more, r.text).toBe(true);
    return r.body.next_cursor as string;
  }
  const base = "status=TODO&sort=created_at&q=one%20or%20two%20or%20three";

  it("when a list cursor comes back with the same parameters, then it pages on", async () => {
    const cursor = await listCursor(base);
    const r = await list(`${base}&limit=1&after=${encodeURIComponent(cursor)}`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((x: { id: string }) => x.id)).toEqual(["T-2"]);
  });

  const changed: Array<[string, string]> = [
    ["another status", "status=TODO,BLOCKED&sort=created_at&q=one%20or%20two%20or%20three&limit=1"],
    ["no status", "sort=created_at&q=one%20or%20two%20or%20three&limit=1"],
    ["another sort", "status=TODO&sort=-created_at&q=one%20or%20two%20or%20three&limit=1"],
    ["the default sort", "status=TODO&q=one%20or%20two%20or%20three&limit=1"],
    ["another limit", `${base}&limit=2`],
    ["another q", "status=TODO&sort=created_at&q=one%20or%20two&limit=1"],
    ["a priority added", `${base}&limit=1&priority=HIGH`],
    ["a created bound added", `${base}&limit=1&created_gte=2000-01-01T00:00:00Z`],
    ["a due bound added", `${base}&limit=1&due_lt=9999-01-01`],
    ["is_blocked added", `${base}&limit=1&is_blocked=false`],
    ["archived=true", `${base}&limit=1&archived=true`],
  ];
  for (const [what, query] of changed) {
    it(`when a list cursor comes back with ${what}, then 400 at /after`, async () => {
      const cursor = await listCursor(base);
      expectRefused(await list(`${query}&after=${encodeURIComponent(cursor)}`), "/after", what);
    });
  }

  const body = { filter: { or: [todo, cond("title", "contains", "o")] }, sort: "created_at" };
  it("when a search cursor comes back with the same body, then it pages on", async () => {
    const cursor = await searchCursor(body);
    const r = await search({ ...body, limit: 1, after: cursor });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.map((x: { id: string }) => x.id)).toEqual(["T-2"]);
  });

  const otherBodies: Array<[string, Record<string, unknown>]> = [
    ["another filter", { ...body, filter: { or: [todo, cond("title", "contains", "t")] }, limit: 1 }],
    ["a filter that matches every current task", { filter: current, sort: "created_at", limit: 1 }],
    ["another sort", { ...body, sort: "-created_at", limit: 1 }],
    ["the default sort", { filter: body.filter, limit: 1 }],
    ["another limit", { ...body, limit: 2 }],
    ["the default limit", { ...body }],
  ];
  for (const [what, other] of otherBodies) {
    it(`when a search cursor comes back with ${what}, then 400 at /after`, async () => {
      const cursor = await searchCursor(body);
      expectRefused(await search({ ...other, after: cursor }), "/after", what);
    });
  }

  it("when a list cursor is used in a search, or a search cursor in a list, then 400 at /after", async () => {
    const fromList = await listCursor("sort=created_at");
    expectRefused(await search({ filter: current, sort: "created_at", limit: 1, after: fromList }), "/after", "a list cursor in a search");
    const fromSearch = await searchCursor({ filter: current, sort: "created_at" });
    expectRefused(await list(`sort=created_at&limit=1&after=${encodeURIComponent(fromSearch)}`), "/after", "a search cursor in a list");
  });

  it("when another organization presents a search cursor, then 400 at /after", async () => {
    const other = await f.tenant("team");
    for (const title of ["theirs one", "theirs two"]) expect((await gw.post("/v1/tasks", { title }, { token: other.apiKey })).status).toBe(201);
    const cursor = await searchCursor({ filter: current, sort: "created_at" });
    const r = await gw.post("/v1/tasks/search", { filter: current, sort: "created_at", limit: 1, after: cursor }, { token: other.apiKey });
    expectRefused(r, "/after", "another organization's cursor");
  });
});
