import { type Caller, type Comment, mentionsIn, type Page } from "@tasksvc/contracts";
import { AppError, fieldError } from "@tasksvc/errors";
import type { Repositories } from "../repo/repositories.js";
import { existingTaskNumber, notFound } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

const noComment = () => notFound("comment on this task");

const notPermitted = (what: string) => new AppError("not_permitted", what);

/**
 * Comments are not task content: no version, no ETag, no task event; each change has a comment
 * event of its own, in its transaction. An archived task keeps taking comments (decision 0037):
 * archiving hides a task from lists, it does not close its conversation.
 */
export function commentsSystem(res: TasksResources) {
  const { repos, members, roles } = res;
  const write = keyedWrites(res);

  /**
   * Asked before the transaction (the keys service is never asked while a row is locked). A member
   * removed between the check and the commit is the same case as one removed a second later.
   */
  async function mentionsOf(c: Caller, body: string): Promise<string[]> {
    const ids = mentionsIn(body);
    if (ids.length === 0) return ids;
    const current = await members.current(c.ctx, c.organizationId, ids);
    const stranger = ids.find((id) => !current.has(id));
    if (stranger !== undefined) throw fieldError("/body", `mentions ${stranger}, who is not a member of this organization`);
    return ids;
  }

  /** The commenter first: an author who mentions themself follows as the commenter. */
  async function follow(r: Repositories, org: string, number: number, author: string | null, mentions: readonly string[]): Promise<void> {
    const follows = [
      ...(author === null ? [] : [{ user: author, reason: "commenter" as const }]),
      ...mentions.filter((m) => m !== author).map((user) => ({ user, reason: "mentioned" as const })),
    ];
    await r.followers.followAutomatically(org, number, follows);
  }

  /** 404 for an unknown task before anything about the comment is said. */
  async function existing(c: Caller, ref: string, id: string): Promise<{ number: number; comment: Comment }> {
    const number = await existingTaskNumber(repos, c.organizationId, ref);
    const comment = await repos.comments.get(c.organizationId, number, id);
    if (!comment) throw noComment();
    return { number, comment };
  }

  return {
    async create(c: Caller, ref: string, body: string): Promise<Comment> {
      const org = c.organizationId;
      const number = await existingTaskNumber(repos, org, ref);
      const mentions = await mentionsOf(c, body);
      return write(c, "createComment", async (r) => {
        // Again in the transaction: the insert's foreign key then holds the task until the commit.
        await existingTaskNumber(r, org, ref);
        const comment = await r.comments.insert(org, number, { author: c.userId, body, mentions });
        await follow(r, org, number, c.userId, mentions);
        await r.events.emitComment(org, c.userId, "comment.created", comment);
        return comment;
      });
    },

    async list(c: Caller, ref: string, limit: number, after: string | undefined): Promise<Page<Comment>> {
      const number = await existingTaskNumber(repos, c.organizationId, ref);
      return repos.comments.list(c.organizationId, number, limit, after);
    },

    async get(c: Caller, ref: string, id: string): Promise<Comment> {
      return (await existing(c, ref, id)).comment;
    },

    /** The same body again changes nothing: no edit time, no event. */
    async update(c: Caller, ref: string, id: string, body: string): Promise<Comment> {
      const org = c.organizationId;
      const { number, comment } = await existing(c, ref, id);
      if (comment.author_id !== c.userId) throw notPermitted("Only the comment's author may edit it.");
      const mentions = await mentionsOf(c, body);
      return write(c, "updateComment", async (r) => {
        const current = await r.comments.get(org, number, id, true);
        if (!current) throw noComment();
        if (current.body === body) return current;
        const updated = await r.comments.update(org, number, id, { body, mentions });
        if (!updated) throw noComment();
        await follow(r, org, number, null, mentions);
        await r.events.emitComment(org, c.userId, "comment.updated", updated);
        return updated;
      });
    },

    /** The author, or an owner or admin of the organization as the keys service knows them now. */
    async remove(c: Caller, ref: string, id: string): Promise<{ id: string }> {
      const org = c.organizationId;
      const { number, comment } = await existing(c, ref, id);
      if (comment.author_id !== c.userId) {
        const role = await roles.roleOf(c.ctx, org, c.userId);
        if (role !== "owner" && role !== "admin") throw notPermitted("Only the comment's author, or an owner or admin of the organization, may delete it.");
      }
      return write(c, "deleteComment", async (r) => {
        if (!(await r.comments.remove(org, number, id))) throw noComment();
        await r.events.emitComment(org, c.userId, "comment.deleted", { id, task_id: comment.task_id });
        return { id };
      });
    },
  };
}
export type CommentsSystem = ReturnType<typeof commentsSystem>;
