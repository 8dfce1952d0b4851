import type { NotifiableEvent, NotificationType } from "@tasksvc/contracts";
import { z } from "zod";

// Who hears of an event: pure rules over one message of the task events stream. Each type's data
// is read tolerantly (unknown fields pass, a type not listed is no notification), because the
// producers add types and fields on their own schedule.

const Id = z.string().min(1).max(100);
const Ids = z.array(Id).max(10_000);

const TaskData = z.looseObject({ id: Id, owner_id: Id.optional(), assignee_ids: Ids.optional() });
const AssigneeChange = z.looseObject({ assignee_ids: z.looseObject({ from: Ids.nullable(), to: Ids.nullable() }).optional() });
const CommentData = z.looseObject({ id: Id, task_id: Id, author_id: Id.nullable().optional(), mention_ids: Ids.optional() });

/** What the rules ask of the event's task before they can answer: its followers, for a new comment. */
export interface Plan {
  taskId: string;
  /** The task's number, when its id is T-<n>. */
  taskNumber: number | null;
  commentId: string | null;
  actorId: string | null;
  /** Notifications whose recipients the message names, before exclusions. */
  direct: Array<{ type: NotificationType; userId: string }>;
  /** Users mentioned in the comment: told once per comment (the first event that names them). */
  mentions: string[];
  /** A new comment: its task's followers hear of it, unless mentioned in it. */
  toFollowers: boolean;
  /** Never told: the user who acted, and a comment's author. */
  excluded: string[];
}

export interface Recipients {
  /** One entry per user and type, the excluded left out. */
  notify: Array<{ type: NotificationType; userId: string }>;
  /** Candidates for `mentioned`: written only for users not yet told of this comment. */
  mentions: string[];
}

const numberOf = (taskId: string): number | null => {
  const m = /^T-([1-9][0-9]{0,11})$/.exec(taskId);
  return m?.[1] === undefined ? null : Number(m[1]);
};

/** `actor_id` when the message has it (null: the system); on older messages, a task's creator is its owner. */
function actorOf(event: NotifiableEvent, ownerId: string | undefined): string | null {
  if (event.actor_id !== undefined) return event.actor_id;
  return event.type === "task.created" ? (ownerId ?? null) : null;
}

const plan = (taskId: string, actorId: string | null, rest: Partial<Plan> = {}): Plan => ({
  taskId,
  taskNumber: numberOf(taskId),
  commentId: null,
  actorId,
  direct: [],
  mentions: [],
  toFollowers: false,
  excluded: actorId === null ? [] : [actorId],
  ...rest,
});

/** Null for a message that notifies nobody (another type, or data it cannot read). */
export function planOf(event: NotifiableEvent): Plan | null {
  switch (event.type) {
    case "task.created": {
      const task = TaskData.safeParse(event.data);
      if (!task.success) return null;
      const actor = actorOf(event, task.data.owner_id);
      return plan(task.data.id, actor, { direct: (task.data.assignee_ids ?? []).map((userId) => ({ type: "assigned", userId })) });
    }
    case "task.updated": {
      const task = TaskData.safeParse(event.data);
      const changes = AssigneeChange.safeParse(event.changes ?? {});
      if (!task.success || !changes.success) return null;
      const change = changes.data.assignee_ids;
      const before = new Set(change?.from ?? []);
      const added = (change?.to ?? []).filter((u) => !before.has(u));
      return plan(task.data.id, actorOf(event, undefined), { direct: added.map((userId) => ({ type: "assigned", userId })) });
    }
    case "task.due_soon":
    case "task.overdue": {
      const task = TaskData.safeParse(event.data);
      if (!task.success) return null;
      const assignees = task.data.assignee_ids ?? [];
      const users = assignees.length > 0 ? assignees : task.data.owner_id === undefined ? [] : [task.data.owner_id];
      const type = event.type === "task.due_soon" ? "due_soon" : "overdue";
      return plan(task.data.id, actorOf(event, undefined), { direct: users.map((userId) => ({ type, userId })) });
    }
    case "comment.created":
    case "comment.updated": {
      const comment = CommentData.safeParse(event.data);
      if (!comment.success) return null;
      const actor = actorOf(event, undefined);
      const author = comment.data.author_id ?? null;
      const excluded = [...new Set([actor, author].filter((u): u is string => u !== null))];
      return plan(comment.data.task_id, actor, {
        commentId: comment.data.id,
        mentions: comment.data.mention_ids ?? [],
        toFollowers: event.type === "comment.created",
        excluded,
      });
    }
    default:
      return null;
  }
}

/** The plan's notifications given the task's followers (asked only when `toFollowers`): each user once per type. */
export function recipientsOf(p: Plan, followers: readonly string[] = []): Recipients {
  const excluded = new Set(p.excluded);
  const mentioned = new Set(p.mentions);
  const seen = new Set<string>();
  const notify: Recipients["notify"] = [];
  const add = (type: NotificationType, userId: string) => {
    const key = `${type}\u0000${userId}`;
    if (excluded.has(userId) || seen.has(key)) return;
    seen.add(key);
    notify.push({ type, userId });
  };
  for (const d of p.direct) add(d.type, d.userId);
  // A follower mentioned in the comment hears of the mention, not of the comment too.
  if (p.toFollowers) for (const f of followers) if (!mentioned.has(f)) add("commented", f);
  return { notify, mentions: [...mentioned].filter((u) => !excluded.has(u)) };
}

/** Both steps, for a caller that has the followers at hand (tests, and events that need none). */
export function notificationsFor(event: NotifiableEvent, followers: readonly string[] = []): Recipients | null {
  const p = planOf(event);
  return p && recipientsOf(p, followers);
}
