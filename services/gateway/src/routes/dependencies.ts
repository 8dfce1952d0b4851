import { AddDependencyBody, DependencyParams, DependencyView, TaskParams } from "@tasksvc/contracts";
import { WithStatus } from "../pipeline/operation.js";
import { resource } from "../pipeline/resource.js";

export const dependencies = resource({ name: "dependencies", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/dependencies",
      operationId: "getTaskDependencies",
      summary: "A task's dependency view: what blocks it and what it blocks",
      params: TaskParams,
      response: DependencyView,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getDependencies", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/dependencies",
      operationId: "addTaskDependency",
      summary: "Record that the task is blocked by blocker_task_id (201 new link, 200 existing link)",
      params: TaskParams,
      body: AddDependencyBody,
      status: 201,
      location: "/v1/tasks/{task_id}/dependencies/{blocker_task_id}",
      otherStatuses: { 200: "The link already existed: nothing changed, no event" },
      response: DependencyView,
      idempotent: true,
      preconditions: "if-match",
      errors: ["dependency_cycle"],
    },
    async ({ clients, params, body, ctx }) => {
      const r = await clients.tasks.call("addDependency", { task_id: params.task_id, blocker_task_id: body.blocker_task_id }, ctx);
      return new WithStatus(r.created ? 201 : 200, r.view);
    },
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/tasks/:task_id/dependencies/:blocker_task_id",
      operationId: "removeTaskDependency",
      summary: "Remove a dependency link; answers the task's dependency view",
      params: DependencyParams,
      response: DependencyView,
      preconditions: "if-match",
    },
    ({ clients, params, ctx }) => clients.tasks.relay("removeDependency", params, ctx),
  );
});
