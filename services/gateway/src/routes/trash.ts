import { DeletedTask, PurgedTask, Task, TaskParams, TrashItem, TrashQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

/** A deleted task (with its subtasks) waits in the trash until restored or erased; what trashed means per route is the tasks service's. */
export const trash = resource({ name: "trash", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "DELETE",
      url: "/v1/tasks/:task_id",
      operationId: "deleteTask",
      summary:
        "Delete a task: it and its subtasks go to the trash (each a task.deleted event), answer 404 everywhere, and are erased at purge_at unless restored",
      params: TaskParams,
      response: DeletedTask,
      idempotent: true,
      preconditions: "if-match",
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteTask", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/restore",
      operationId: "restoreTask",
      summary:
        "Restore a task from the trash with the subtasks deleted with it (each a new version and a task.restored event); 409 parent_in_trash while its parent is still there",
      params: TaskParams,
      response: Task,
      idempotent: true,
      etag: true,
      errors: ["parent_in_trash"],
    },
    ({ clients, params, ctx }) => clients.tasks.relay("restoreTask", params, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/trash",
      operationId: "listTrash",
      summary: "The organization's trash: deleted tasks (subtasks too), newest deletion first, with when each will be erased",
      query: TrashQuery,
      response: page(TrashItem),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listTrash", query, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/trash/:task_id",
      operationId: "purgeTask",
      summary:
        "Erase a task in the trash now, with every task below it (an owner or admin only, else 403 insufficient_scope): versions, comments, attachments, links, board entries, notifications; emits task.purged",
      params: TaskParams,
      response: PurgedTask,
      errors: ["insufficient_scope"],
    },
    ({ clients, params, ctx }) => clients.tasks.relay("purgeTask", params, ctx),
  );
});
