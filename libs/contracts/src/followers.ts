import { z } from "zod";
import { CreatedAt, OpaqueId, PageQuery } from "./common.js";
import { TaskIdParam } from "./tasks.js";

const USER_ID = "usr_7hQ2mD9xK3pL5nB8vR4tW1";

export const FOLLOW_REASONS = ["owner", "assignee", "commenter", "mentioned", "manual"] as const;
export const FollowReason = z.enum(FOLLOW_REASONS);
export type FollowReason = z.infer<typeof FollowReason>;

/** Not task content: following changes no version and no ETag. */
export const Follower = z.object({
  user_id: z.string().meta({ description: "The following user's id.", examples: [USER_ID] }),
  reason: FollowReason.meta({
    description: "Why they follow: `owner` (made the task), `assignee` (was assigned), `commenter`, `mentioned`, or `manual` (followed by request).",
    examples: ["assignee"],
  }),
  created_at: CreatedAt,
});
export type Follower = z.infer<typeof Follower>;

export const UnfollowedTask = z.object({ user_id: z.string().meta({ description: "The user who no longer follows the task.", examples: [USER_ID] }) });

export const FollowerParams = z.object({
  task_id: TaskIdParam,
  user_id: OpaqueId.meta({ description: "A user id (`usr_…`), or `me` for the credential's own user.", examples: ["me"] }),
});
export type FollowerParams = z.infer<typeof FollowerParams>;

export const ListFollowersInput = PageQuery.extend({ task_id: OpaqueId });
