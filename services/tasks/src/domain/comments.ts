import { type Caller, type Comment, mentionsIn, type Page } from "@tasksvc/contracts";
import { AppError, fieldError } from "@tasksvc/errors";
import { isPgError, KeyRecordedMeanwhile, PG } from "@tasksvc/db";
import type { CreatedComment } from "../repo/comments-repo.js";
import type { Repositories } from "../repo/repositories.js";
import { existingTaskNumber, notFound, noTask, pathNumber } from "./refs.js";
import type { TasksResources } from "./resources.js";
import { keyedWrites } from "./writes.js";

const DEADLOCK_ATTEMPTS = 5;
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

  /** The users an edit mentions follow the task (a new comment's follows are in its statement). */
  async function followMentioned(r: Repositories, org: string, number: number, mentions: readonly string[]): Promise<void> {
    await r.followers.followAutomatically(
      org,
      number,
      mentions.map((user) => ({ user, reason: "mentioned" as const })),
    );
  }

  /** 404 for an unknown task before anything about the comment is said. */
  async function existing(c: Caller, ref: string, id: string): Promise<{ number: number; comment: Comment }> {
    const number = await existingTaskNumber(repos, c.organizationId, ref);
    const comment = await repos.comments.get(c.organizationId, number, id);
    if (!comment) throw noComment();
    return { number, comment };
  }

  return {
    /**
     * One statement after the replay (see the repository): a comment is the most repeated write on
     * a busy task, and eleven round trips made it cost five times a task create's CPU here.
     */
    async create(c: Caller, ref: string, body: string): Promise<Comment> {
      const org = c.organizationId;
      const number = pathNumber(ref);
      const { credentialId, idempotencyKey: key } = c;
      const prior = await repos.idempotency.replay<Comment>(credentialId, key, "createComment");
      if (prior !== undefined) return prior;
      let mentions: string[];
      try {
        mentions = await mentionsOf(c, body);
      } catch (e) {
        // An unknown task is told before anything about the comment.
        await existingTaskNumber(repos, org, ref);
        throw e;
      }
      for (let attempt = 1; ; attempt++) {
        let made: CreatedComment;
        try {
          made = await repos.comments.create(org, number, { author: c.userId, body, mentions, credentialId, key });
        } catch (e) {
          // A deadlock on the follows of another write rolled the whole statement back: running it again is safe.
          if (attempt < DEADLOCK_ATTEMPTS && isPgError(e) && e.code === PG.deadlockDetected) continue;
          throw e;
        }
        if (made.outcome === "no_task") throw noTask();
        if (made.outcome === "key_taken")
          return repos.idempotency.replayRecordedMeanwhile<Comment>(new KeyRecordedMeanwhile(), credentialId, key, "createComment");
        res.written();
        return made.comment;
      }
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
        await followMentioned(r, org, number, mentions);
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
