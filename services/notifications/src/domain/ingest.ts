import type { NotifiableEvent } from "@tasksvc/contracts";
import { planOf, recipientsOf } from "./recipients.js";
import type { NotificationsResources } from "./resources.js";

/**
 * One event in, its notifications written in one statement. The followers are asked before it,
 * so no connection waits on NATS; a follower who joins between the two hears of the next comment.
 * Answers how many notifications were new (0 for a redelivery).
 */
export function ingestSystem(res: NotificationsResources) {
  return {
    async ingest(event: NotifiableEvent): Promise<number> {
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
