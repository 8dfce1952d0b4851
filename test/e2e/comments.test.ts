import { SCOPES, tasksRpc } from "@tasksvc/contracts";
import { client, connectNats } from "@tasksvc/nats";
import { e2eContext, pointersOf, type Tenant } from "@tasksvc/testing";
import { describe, expect, it } from "vitest";

// Comments on tasks through the gateway: what they store, who may change them, mentions, who
// follows, and what a task of another organization or an archived task answers.
const { gw, f, db, stack } = e2eContext();

type Caller = Pick<Tenant, "apiKey">;
const newTask = async (t: Caller, body: Record<string, unknown> = { title: "talk about it" }) => {
  const r = await gw.post("/v1/tasks", body, { token: t.apiKey });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};
const comment = (t: Caller, task: string, body: unknown, headers?: Record<string, string>) =>
  gw.post(`/v1/tasks/${task}/comments`, { body }, { token: t.apiKey, ...(headers ? { headers } : {}) });
const commented = async (t: Caller, task: string, body: string) => {
  const r = await comment(t, task, body);
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; body: string; mention_ids: string[] };
};
const commentRows = async (orgId: string) => Number((await db`select count(*)::int as n from tasks.comments where organization_id = ${orgId}`)[0]?.["n"]);
const followersOf = async (t: Caller, task: string) => {
  const r = await gw.get(`/v1/tasks/${task}/followers`, { token: t.apiKey });
  expect(r.status, r.text).toBe(200);
  return (r.body.data as Array<{ user_id: string; reason: string }>).map((x) => [x.user_id, x.reason]);
};

describe("comments", () => {
  it("when a comment is created, read, listed, edited and deleted, then each answers the comment as stored, and the task's version and ETag stay", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const r = await comment(t, task, "  First thought.\n\nSecond line.  \n");
    expect(r.status, r.text).toBe(201);
    expect(r.body).toEqual({
      id: expect.stringMatching(/^cmt_/),
      task_id: task,
      author_id: t.userId,
      body: "First thought.\n\nSecond line.",
      mention_ids: [],
      created_at: expect.any(String),
      updated_at: r.body.created_at,
      edited_at: null,
    });
    expect(r.headers.get("location")).toBe(`/v1/tasks/${task}/comments/${r.body.id}`);
    const second = await commented(t, task, "Another one.");

    const got = await gw.get(`/v1/tasks/${task}/comments/${r.body.id}`, { token: t.apiKey });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(r.body);
    const list = await gw.get(`/v1/tasks/${task}/comments`, { token: t.apiKey });
    expect(list.status, list.text).toBe(200);
    expect(list.body).toEqual({ data: [r.body, second], has_more: false, next_cursor: null });

    const edited = await gw.patch(`/v1/tasks/${task}/comments/${r.body.id}`, { body: " Better thought. " }, { token: t.apiKey });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ id: r.body.id, body: "Better thought.", created_at: r.body.created_at, edited_at: expect.any(String) });
    expect(edited.body.updated_at).toBe(edited.body.edited_at);
    expect(Date.parse(edited.body.edited_at)).toBeGreaterThanOrEqual(Date.parse(r.body.created_at));
    // The same text again is no edit: the comment stays as it is.
    const again = await gw.patch(`/v1/tasks/${task}/comments/${r.body.id}`, { body: "Better thought." }, { token: t.apiKey });
    expect(again.body, again.text).toEqual(edited.body);

    const del = await gw.delete(`/v1/tasks/${task}/comments/${r.body.id}`, { token: t.apiKey });
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: r.body.id });
    expect((await gw.get(`/v1/tasks/${task}/comments/${r.body.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.delete(`/v1/tasks/${task}/comments/${r.body.id}`, { token: t.apiKey })).status).toBe(404);
    expect((await gw.get(`/v1/tasks/${task}/comments`, { token: t.apiKey })).body.data).toEqual([second]);

    const after = await gw.get(`/v1/tasks/${task}`, { token: t.apiKey });
    expect(after.body.version, after.text).toBe(1);
    expect(after.headers.get("etag")).toBe('"1"');
  });

  it("when a create is repeated with its Idempotency-Key, then the same comment answers and one is stored", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const headers = { "idempotency-key": `comment-${task}-${t.organizationId}` };
    const first = await comment(t, task, "Once.", headers);
    const replay = await comment(t, task, "Once.", headers);
    expect(first.status, first.text).toBe(201);
    expect(replay.status, replay.text).toBe(201);
    expect(replay.body).toEqual(first.body);
    expect(await commentRows(t.organizationId)).toBe(1);
  });

  it("when executions of one keyed create reach the tasks service at once (twins, as a retry after a timeout makes), then all answer the same comment and one comment, one follow and one event are stored", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const nc = await connectNats({ url: stack.natsUrl, name: "test-comment-twins" });
    try {
      const tasks = client(nc, tasksRpc, { namespace: stack.namespace, timeoutMs: 10_000 });
      const ctx = {
        request_id: "req_comment_twins",
        organization_id: t.organizationId,
        user_id: t.userId,
        credential_id: `key_twin_${t.organizationId}`,
        scopes: [...SCOPES],
        plan: "pro" as const,
        idempotency_key: "twin-comment",
      };
      const answers = await Promise.all(Array.from({ length: 6 }, () => tasks.call("createComment", { task_id: task, body: "Twice?" }, ctx)));
      expect(new Set(answers.map((a) => JSON.stringify(a))).size, JSON.stringify(answers)).toBe(1);
      expect(await commentRows(t.organizationId)).toBe(1);
      const events = await db`select count(*)::int as n from tasks.events where organization_id = ${t.organizationId} and type = 'comment.created'`;
      expect(events[0]?.["n"]).toBe(1);
    } finally {
      await nc.close();
    }
  });

  it("when a body is empty after trimming, too long after trimming, missing or not text, then 400 at /body and nothing is written", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const longest = "é".repeat(20_000);
    expect((await commented(t, task, ` \n${longest}\t `)).body).toBe(longest);
    for (const body of ["", " \n\t ", "x".repeat(20_001), 42, null, "bad\u0000text"]) {
      const r = await comment(t, task, body);
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual(["/body"]);
    }
    const missing = await gw.post(`/v1/tasks/${task}/comments`, {}, { token: t.apiKey });
    expect(pointersOf(missing.body), missing.text).toEqual(["/body"]);
    const extra = await gw.post(`/v1/tasks/${task}/comments`, { body: "x", author_id: t.userId }, { token: t.apiKey });
    expect(extra.status, extra.text).toBe(400);
    expect(await commentRows(t.organizationId)).toBe(1);
  });

  it("when a body mentions members, then mention_ids lists them once each in order of first appearance", async () => {
    const t = await f.tenant();
    const [ann, bob] = [await f.user(t.organizationId), await f.user(t.organizationId)];
    const task = await newTask(t);
    const c = await commented(t, task, `<@${bob.userId}> and <@${ann.userId}>, then <@${bob.userId}> again; <@usr_> and <@${ann.userId}x are not mentions`);
    expect(c.mention_ids).toEqual([bob.userId, ann.userId]);
    const plain = await commented(t, task, "email me at a<@b.example");
    expect(plain.mention_ids).toEqual([]);
  });

  it("when a body mentions a non-member (another organization's user, a made-up id, a former member) or more than 50 users, then 400 at /body and nothing is written", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const gone = await f.user(t.organizationId);
    await f.admin("removeMember", { org: t.organizationId, user: gone.userId });
    const task = await newTask(t);
    const mine = await commented(t, task, "mine");
    for (const stranger of [other.userId, "usr_doesnotexist", gone.userId]) {
      const r = await comment(t, task, `hello <@${t.userId}> and <@${stranger}>`);
      expect(r.status, r.text).toBe(400);
      expect(pointersOf(r.body)).toEqual(["/body"]);
      const edit = await gw.patch(`/v1/tasks/${task}/comments/${mine.id}`, { body: `<@${stranger}>` }, { token: t.apiKey });
      expect(edit.status, edit.text).toBe(400);
      expect(pointersOf(edit.body)).toEqual(["/body"]);
    }
    const many = Array.from({ length: 51 }, (_, i) => `<@usr_many${i}>`).join(" ");
    const tooMany = await comment(t, task, many);
    expect(tooMany.status, tooMany.text).toBe(400);
    expect(pointersOf(tooMany.body)).toEqual(["/body"]);
    expect(await commentRows(t.organizationId)).toBe(1);
    expect((await gw.get(`/v1/tasks/${task}/comments/${mine.id}`, { token: t.apiKey })).body.body).toBe("mine");
    expect(await followersOf(t, task)).toEqual([[t.userId, "owner"]]);
  });

  it("when someone else edits or deletes a comment, then 403 not_permitted, except that an owner or admin may delete it", async () => {
    const t = await f.tenant();
    const [member, admin] = [await f.user(t.organizationId, "member"), await f.user(t.organizationId, "admin")];
    const task = await newTask(t);
    const byMember = await commented(member, task, "by a member");
    const byOwner = await commented(t, task, "by the owner");
    const path = (c: { id: string }) => `/v1/tasks/${task}/comments/${c.id}`;
    for (const [who, c] of [
      [admin, byMember],
      [t, byMember],
      [member, byOwner],
    ] as const) {
      const edit = await gw.patch(path(c), { body: "taken over" }, { token: who.apiKey });
      expect(edit.status, edit.text).toBe(403);
      expect(edit.body.code).toBe("not_permitted");
    }
    const refused = await gw.delete(path(byOwner), { token: member.apiKey });
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.code).toBe("not_permitted");
    expect((await gw.get(path(byOwner), { token: t.apiKey })).body.body).toBe("by the owner");

    const byAdmin = await gw.delete(path(byMember), { token: admin.apiKey });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    const byTheOwner = await commented(member, task, "again");
    expect((await gw.delete(path(byTheOwner), { token: t.apiKey })).status).toBe(200);
    // A member demoted from admin may no longer delete others' comments.
    const later = await commented(member, task, "later");
    await f.admin("setRole", { org: t.organizationId, user: admin.userId, role: "member" });
    expect((await gw.delete(path(later), { token: admin.apiKey })).status).toBe(403);
  });

  it("when a member comments or is mentioned, then they follow the task, and one who unfollowed is not added back", async () => {
    const t = await f.tenant();
    const [ann, bob, cy] = [await f.user(t.organizationId), await f.user(t.organizationId), await f.user(t.organizationId)];
    const task = await newTask(t);
    const unfollow = await gw.delete(`/v1/tasks/${task}/followers/me`, { token: cy.apiKey });
    expect(unfollow.status, unfollow.text).toBe(200);
    const c = await commented(ann, task, `<@${ann.userId}> <@${bob.userId}> <@${cy.userId}> <@${t.userId}>`);
    const byUser = (a: string[], b: string[]) => String(a[0]).localeCompare(String(b[0]));
    const expected = [
      [t.userId, "owner"],
      [ann.userId, "commenter"],
      [bob.userId, "mentioned"],
    ];
    expect((await followersOf(t, task)).sort(byUser)).toEqual([...expected].sort(byUser));
    // Cy, mentioned again by an edit and then commenting, still does not follow.
    const edit = await gw.patch(`/v1/tasks/${task}/comments/${c.id}`, { body: `<@${cy.userId}> again` }, { token: ann.apiKey });
    expect(edit.status, edit.text).toBe(200);
    await commented(cy, task, "I am only passing by");
    expect((await followersOf(t, task)).sort(byUser)).toEqual([...expected].sort(byUser));
    // A mention added by an edit makes its member follow.
    const dan = await f.user(t.organizationId);
    await gw.patch(`/v1/tasks/${task}/comments/${c.id}`, { body: `and <@${dan.userId}>` }, { token: ann.apiKey });
    expect(await followersOf(t, task)).toContainEqual([dan.userId, "mentioned"]);
  });

  it("when the task belongs to another organization or does not exist, or the comment is on another task, then 404 on every comment route", async () => {
    const t = await f.tenant();
    const other = await f.tenant();
    const task = await newTask(t);
    const sibling = await newTask(t);
    const c = await commented(t, task, "here");
    // Numbers count per organization: theirs is T-3, which this organization lacks.
    for (let i = 0; i < 2; i++) await newTask(other);
    const theirs = await newTask(other);
    const theirComment = await commented(other, theirs, "theirs");
    const cases: Array<[string, string, unknown?]> = [
      ["GET", `/v1/tasks/${theirs}/comments`],
      ["POST", `/v1/tasks/${theirs}/comments`, { body: "x" }],
      ["GET", `/v1/tasks/${theirs}/comments/${theirComment.id}`],
      ["PATCH", `/v1/tasks/${theirs}/comments/${theirComment.id}`, { body: "x" }],
      ["DELETE", `/v1/tasks/${theirs}/comments/${theirComment.id}`],
      ["GET", `/v1/tasks/${task}/comments/${theirComment.id}`],
      ["GET", `/v1/tasks/${sibling}/comments/${c.id}`],
      ["PATCH", `/v1/tasks/${sibling}/comments/${c.id}`, { body: "x" }],
      ["DELETE", `/v1/tasks/${sibling}/comments/${c.id}`],
      ["GET", "/v1/tasks/T-999999/comments"],
      ["POST", "/v1/tasks/T-999999/comments", { body: "x" }],
      ["GET", "/v1/tasks/not-a-task/comments"],
    ];
    for (const [method, path, body] of cases) {
      const r = await gw.request(method, path, { token: t.apiKey, ...(body === undefined ? {} : { body }) });
      expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
      expect(r.body.code).toBe("resource_not_found");
    }
    expect((await gw.get(`/v1/tasks/${theirs}/comments/${theirComment.id}`, { token: other.apiKey })).body.body).toBe("theirs");
  });

  it("when the task is archived, then its comments can still be read, written, edited and deleted", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const before = await commented(t, task, "before");
    const archived = await gw.post(`/v1/tasks/${task}/archive`, undefined, { token: t.apiKey });
    expect(archived.status, archived.text).toBe(200);
    const after = await commented(t, task, "after");
    expect((await gw.patch(`/v1/tasks/${task}/comments/${before.id}`, { body: "edited" }, { token: t.apiKey })).status).toBe(200);
    expect((await gw.delete(`/v1/tasks/${task}/comments/${after.id}`, { token: t.apiKey })).status).toBe(200);
    const list = await gw.get(`/v1/tasks/${task}/comments`, { token: t.apiKey });
    expect(
      list.body.data.map((c: { body: string }) => c.body),
      list.text,
    ).toEqual(["edited"]);
    expect((await gw.get(`/v1/tasks/${task}`, { token: t.apiKey })).body.version).toBe(archived.body.version);
  });

  it("when a task has more comments than fit a page's bytes, then pages stop early and walking them gives every comment once, oldest first", async () => {
    const t = await f.tenant();
    const task = await newTask(t);
    const ids: string[] = [];
    // 60 kB of UTF-8 each: twenty pass the page budget of about 1 MB.
    for (let i = 0; i < 20; i++) ids.push((await commented(t, task, `${i} ${"€".repeat(19_990)}`)).id);
    const seen: string[] = [];
    let after: string | null = null;
    let pages = 0;
    do {
      const q: string = after === null ? "" : `&after=${encodeURIComponent(after)}`;
      const r = await gw.get(`/v1/tasks/${task}/comments?limit=100${q}`, { token: t.apiKey });
      expect(r.status, r.text.slice(0, 500)).toBe(200);
      expect(r.body.data.length).toBeGreaterThan(0);
      expect(Buffer.byteLength(r.text)).toBeLessThan(1024 * 1024);
      seen.push(...r.body.data.map((c: { id: string }) => c.id));
      after = r.body.next_cursor;
      pages++;
    } while (after !== null);
    expect(pages).toBeGreaterThan(1);
    expect(seen).toEqual(ids);
  });
});
