import type { Caller, Follower, Page } from "@tasksvc/contracts";
import { memberInPath } from "./people.js";
import { existingTaskNumber } from "./refs.js";
import type { TasksResources } from "./resources.js";

/** Following is not task content: no version, no event, no ETag change. */
export function followersSystem(res: TasksResources) {
  const { repos, members } = res;
  return {
    async list(c: Caller, ref: string, limit: number, after: string | undefined): Promise<Page<Follower>> {
      const number = await existingTaskNumber(repos, c.organizationId, ref);
      return repos.followers.list(c.organizationId, number, limit, after);
    },

    /** For the notifications service, asking as the system: no caller, no check that the task still exists (a purged task has no rows). */
    async followersOf(org: string, number: number, limit: number, after: string | undefined): Promise<Page<Follower>> {
      return repos.followers.list(org, number, limit, after);
    },

    async follow(c: Caller, ref: string, userRef: string): Promise<Follower> {
      const number = await existingTaskNumber(repos, c.organizationId, ref);
      const user = await memberInPath(members, c, userRef);
      return repos.followers.follow(c.organizationId, number, user);
    },

    async unfollow(c: Caller, ref: string, userRef: string): Promise<{ user_id: string }> {
      const number = await existingTaskNumber(repos, c.organizationId, ref);
      const user = await memberInPath(members, c, userRef);
      await repos.followers.unfollow(c.organizationId, number, user);
      return { user_id: user };
    },
  };
}
export type FollowersSystem = ReturnType<typeof followersSystem>;
