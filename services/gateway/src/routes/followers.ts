import { Follower, FollowerParams, PageQuery, page, TaskParams, UnfollowedTask } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

/** Following is no change to the task: no version, no ETag, so neither If-Match nor an event. */
export const followers = resource({ name: "followers", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/followers",
      operationId: "listTaskFollowers",
      summary: "The users who follow a task, oldest first (its owner, its assignees, and whoever followed it)",
      params: TaskParams,
      query: PageQuery.strict(),
      response: page(Follower),
      paginated: true,
    },
    ({ clients, params, query, ctx }) => clients.tasks.relay("listFollowers", { ...query, task_id: params.task_id }, ctx),
  );
  r.op(
    {
      method: "PUT",
      url: "/v1/tasks/:task_id/followers/:user_id",
      operationId: "followTask",
      summary: "Make a member (or `me`) follow a task; a follower stays as they are",
      params: FollowerParams,
      response: Follower,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("followTask", params, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/tasks/:task_id/followers/:user_id",
      operationId: "unfollowTask",
      summary: "Stop a member (or `me`) following a task; no automatic follow brings them back",
      params: FollowerParams,
      response: UnfollowedTask,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("unfollowTask", params, ctx),
  );
});
