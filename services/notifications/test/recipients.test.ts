import type { NotifiableEvent } from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";
import { notificationsFor, planOf, recipientsOf } from "../src/domain/recipients.js";

// The recipient rules as pure functions over messages of the task events stream: every type that
// notifies, the users never told, duplicates within a message, and messages the rules do not know.

const [owner, ann, bob, cat, dan] = ["usr_owner", "usr_ann", "usr_bob", "usr_cat", "usr_dan"];

function event(type: string, data: unknown, extra: Partial<NotifiableEvent> = {}): NotifiableEvent {
  return { id: `evt_${type}`, type, organization_id: "org_1", created_at: "2026-11-23T09:30:00.000Z", data, ...extra };
}
const task = (assignees: string[], more: Record<string, unknown> = {}) => ({ id: "T-7", title: "x", owner_id: owner, assignee_ids: assignees, ...more });
const comment = (mentions: string[], author = ann) => ({
  id: "cmt_1",
  task_id: "T-7",
  author_id: author,
  body: "hi",
  mention_ids: mentions,
  created_at: "2026-11-23T09:30:00.000Z",
  updated_at: "2026-11-23T09:30:00.000Z",
  edited_at: null,
});
const pairs = (r: ReturnType<typeof notificationsFor>) => (r?.notify ?? []).map((n) => `${n.type}:${n.userId}`).sort();

describe("task.created", () => {
  it("when a task is created with assignees, then each assignee is told `assigned`, but never the actor", () => {
    const r = notificationsFor(event("task.created", task([ann, bob, owner]), { actor_id: owner }));
    expect(pairs(r)).toEqual([`assigned:${ann}`, `assigned:${bob}`]);
    expect(r?.mentions).toEqual([]);
  });

  it("when the message has no actor_id (older producers), then the task's owner is taken as the actor", () => {
    expect(pairs(notificationsFor(event("task.created", task([owner, ann]))))).toEqual([`assigned:${ann}`]);
    expect(planOf(event("task.created", task([ann])))?.actorId).toBe(owner);
  });

  it("when actor_id is null (the system made it), then every assignee is told, the owner included", () => {
    expect(pairs(notificationsFor(event("task.created", task([owner, ann]), { actor_id: null })))).toEqual([`assigned:${ann}`, `assigned:${owner}`]);
  });

  it("when an assignee is listed twice, then they are told once", () => {
    expect(pairs(notificationsFor(event("task.created", task([ann, ann]), { actor_id: owner })))).toEqual([`assigned:${ann}`]);
  });

  it("when a task has no assignees, then nobody is told", () => {
    expect(pairs(notificationsFor(event("task.created", task([]), { actor_id: owner })))).toEqual([]);
  });
});

describe("task.updated", () => {
  it("when assignees change, then only the newly added ones are told, never the actor", () => {
    const changes = { assignee_ids: { from: [ann, bob], to: [bob, cat, dan, ann] } };
    const r = notificationsFor(event("task.updated", task([bob, cat, dan, ann]), { actor_id: dan, changes }));
    expect(pairs(r)).toEqual([`assigned:${cat}`]);
  });

  it("when something else changed, or assignees were only removed, then nobody is told", () => {
    expect(pairs(notificationsFor(event("task.updated", task([ann]), { actor_id: owner, changes: { title: { from: "a", to: "b" } } })))).toEqual([]);
    expect(pairs(notificationsFor(event("task.updated", task([]), { actor_id: owner, changes: { assignee_ids: { from: [ann], to: [] } } })))).toEqual([]);
    expect(pairs(notificationsFor(event("task.updated", task([ann]), { actor_id: owner })))).toEqual([]);
  });

  it("when the message has no actor_id, then every newly added assignee is told (nobody is known to have acted)", () => {
    const changes = { assignee_ids: { from: [], to: [owner, ann] } };
    expect(pairs(notificationsFor(event("task.updated", task([owner, ann]), { changes })))).toEqual([`assigned:${ann}`, `assigned:${owner}`]);
  });
});

describe("task.due_soon and task.overdue", () => {
  it("when a task with assignees comes due, then its assignees are told, with actor null", () => {
    for (const [type, kind] of [
      ["task.due_soon", "due_soon"],
      ["task.overdue", "overdue"],
    ] as const) {
      const p = planOf(event(type, task([ann, bob]), { actor_id: null }));
      expect(p?.actorId).toBeNull();
      expect(pairs(p && recipientsOf(p))).toEqual([`${kind}:${ann}`, `${kind}:${bob}`]);
    }
  });

  it("when a task without assignees comes due, then its owner is told", () => {
    expect(pairs(notificationsFor(event("task.overdue", task([]), { actor_id: null })))).toEqual([`overdue:${owner}`]);
    expect(pairs(notificationsFor(event("task.due_soon", task([]))))).toEqual([`due_soon:${owner}`]);
  });
});

describe("comments", () => {
  it("when a comment is created, then mentioned users are candidates for `mentioned` and the other followers are told `commented`, never the author or the actor", () => {
    const e = event("comment.created", comment([bob, ann, cat]), { actor_id: ann });
    const p = planOf(e);
    expect(p).toMatchObject({ taskId: "T-7", taskNumber: 7, commentId: "cmt_1", toFollowers: true });
    const r = p && recipientsOf(p, [owner, ann, bob, dan, dan]);
    expect(r?.mentions).toEqual([bob, cat]);
    expect(pairs(r)).toEqual([`commented:${dan}`, `commented:${owner}`]);
  });

  it("when the actor is not the author (an admin's action), then neither is told", () => {
    const r = notificationsFor(event("comment.created", comment([owner, bob], ann), { actor_id: owner }), [owner, ann, bob, cat]);
    expect(r?.mentions).toEqual([bob]);
    expect(pairs(r)).toEqual([`commented:${cat}`]);
  });

  it("when a comment mentions the same user twice, then they are one candidate", () => {
    expect(notificationsFor(event("comment.created", comment([bob, bob]), { actor_id: ann }), [])?.mentions).toEqual([bob]);
  });

  it("when a comment is edited, then its mentions are candidates again (the store tells only new ones) and followers are not told", () => {
    const p = planOf(event("comment.updated", comment([bob, cat]), { actor_id: ann }));
    expect(p?.toFollowers).toBe(false);
    const r = p && recipientsOf(p, [owner, dan]);
    expect(r?.mentions).toEqual([bob, cat]);
    expect(pairs(r)).toEqual([]);
  });

  it("when a comment is deleted, then nobody is told", () => {
    expect(notificationsFor(event("comment.deleted", { id: "cmt_1", task_id: "T-7" }, { actor_id: ann }))).toBeNull();
  });

  it("when the comment's task id is not T-<n>, then no followers are asked for", () => {
    expect(planOf(event("comment.created", { ...comment([]), task_id: "weird" }, { actor_id: ann }))?.taskNumber).toBeNull();
  });
});

describe("messages the rules do not know", () => {
  it("when the type is another one (archived, a webhook endpoint's, one not invented yet), then nobody is told", () => {
    for (const type of ["task.archived", "task.deleted", "webhook_endpoint.disabled", "label.created"]) {
      expect(notificationsFor(event(type, task([ann]), { actor_id: owner }), [bob]), type).toBeNull();
    }
  });

  it("when the data lacks what a type needs, then nobody is told and nothing throws", () => {
    expect(notificationsFor(event("task.created", { title: "no id" }))).toBeNull();
    expect(notificationsFor(event("comment.created", { id: "cmt_1" }))).toBeNull();
    expect(notificationsFor(event("task.overdue", null))).toBeNull();
    expect(notificationsFor(event("task.updated", task([ann]), { changes: "odd" }))).toBeNull();
  });

  it("when the message carries fields nobody knows yet, then they are ignored", () => {
    const r = notificationsFor(event("task.created", task([ann], { color: "red" }), { actor_id: owner, extra: { x: 1 } } as Partial<NotifiableEvent>));
    expect(pairs(r)).toEqual([`assigned:${ann}`]);
  });
});
