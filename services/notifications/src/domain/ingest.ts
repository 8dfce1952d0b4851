import { deleteInBatches } from "@tasksvc/db";
import type { NotifiableEvent } from "@tasksvc/contracts";
import { planOf, recipientsOf } from "./recipients.js";
import type { NotificationsResources } from "./resources.js";

/** Notifications deleted per statement when a task is erased. */
const FORGET_BATCH = 1_000;
/** Recently erased tasks looked at again per pass. */
const STRAGGLER_TASKS = 1_000;

/**
 * One event in, its notifications written in one statement. The followers are asked before it,
 * so no connection waits on NATS; a follower who joins between the two hears of the next comment.
 * Answers how many notifications were new (0 for a redelivery).
 */
export function ingestSystem(res: NotificationsResources) {
  /**
   * An erased task takes its notifications (and what they count unread) with it; a redelivery finds
   * none left. It is recorded first, so an event of the task that comes later makes none again.
   */
  async function forget(event: NotifiableEvent): Promise<number> {
    const data = event.data as { id?: unknown } | null;
    if (typeof data?.id !== "string") return 0;
    const id = data.id;
    await res.repo.markErased(event.organization_id, id);
    await deleteInBatches(FORGET_BATCH, () => res.repo.forgetTaskBatch(event.organization_id, id, FORGET_BATCH));
    return 0;
  }

  return {
    /**
     * An event taken at the moment of an erasure, its statement begun before the erasure was
     * recorded, may commit a notification after the erasure's deletes: the tasks erased in the last
     * `seconds` are forgotten again.
     */
    async forgetStragglers(seconds: number): Promise<number> {
      let tasks = 0;
      for (const t of await res.repo.recentlyErased(seconds, STRAGGLER_TASKS)) {
        await deleteInBatches(FORGET_BATCH, () => res.repo.forgetTaskBatch(t.organization_id, t.task_id, FORGET_BATCH));
        tasks++;
      }
      return tasks;
    },

    async ingest(event: NotifiableEvent): Promise<number> {
      if (event.type === "task.purged") return forget(event);
      const plan = planOf(event);
      if (!plan) return 0;
      const followers = plan.toFollowers && plan.taskNumber !== null ? await res.tasks.followers(event.organization_id, plan.taskNumber) : [];
      const { notify, mentions } = recipientsOf(plan, followers);
      if (notify.length === 0 && mentions.length === 0) return 0;
      return res.repo.insertEvent({
        organizationId: event.organization_id,
        eventId: event.id,
        createdAt: event.created_at,
        taskId: plan.taskId,
        commentId: plan.commentId,
        actorId: plan.actorId,
        notify,
        mentions,
      });
    },
  };
}
export type IngestSystem = ReturnType<typeof ingestSystem>;
