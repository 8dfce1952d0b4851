import {
  CreateTaskBody,
  GetTaskQuery,
  ListTasksQuery,
  PageQuery,
  SearchTasksBody,
  Task,
  TaskParams,
  TaskVersion,
  UpdateTaskBody,
  page,
} from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const tasks = resource({ name: "tasks", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/tasks",
      operationId: "createTask",
      summary: "Create a task (numbered T-<n> per organization; owned by the credential's user)",
      body: CreateTaskBody,
      status: 201,
      location: "/v1/tasks/{id}",
      response: Task,
      idempotent: true,
      etag: true,
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createTask", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks",
      operationId: "listTasks",
      summary: "List tasks: filters, full text and sort (filters apply to the current version); with `as_of`, the list as it stood then",
      query: ListTasksQuery,
      response: page(Task),
      paginated: true,
      errors: ["resource_not_found"],
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listTasks", query, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/search",
      operationId: "searchTasks",
      summary: "Search tasks with a filter tree (and, or, not; conditions on fields); a page like the list",
      scope: "tasks:read",
      body: SearchTasksBody,
      status: 200,
      response: page(Task),
      paginated: true,
      cursorIn: "body",
    },
    ({ clients, body, ctx }) => clients.tasks.relay("searchTasks", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id",
      operationId: "getTask",
      summary: "Get a task: its current version, or with `as_of` the task as it stood at that instant",
      params: TaskParams,
      query: GetTaskQuery,
      response: Task,
      etag: true,
      preconditions: "if-none-match",
    },
    ({ clients, params, query, ctx }) => clients.tasks.relay("getTask", { ...query, ...params }, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/tasks/:task_id",
      operationId: "updateTask",
      summary: "Update a task: a new immutable version when the content changed, none otherwise",
      params: TaskParams,
      body: UpdateTaskBody,
      response: Task,
      idempotent: true,
      etag: true,
      preconditions: "if-match",
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("updateTask", { task_id: params.task_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/archive",
      operationId: "archiveTask",
      summary: "Archive a task (emits task.archived; archiving an archived task changes nothing)",
      params: TaskParams,
      response: Task,
      idempotent: true,
      etag: true,
      preconditions: "if-match",
    },
    ({ clients, params, ctx }) => clients.tasks.relay("archiveTask", params, ctx),
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/unarchive",
      operationId: "unarchiveTask",
      summary: "Unarchive a task (emits task.updated)",
      params: TaskParams,
      response: Task,
      idempotent: true,
      etag: true,
      preconditions: "if-match",
    },
    ({ clients, params, ctx }) => clients.tasks.relay("unarchiveTask", params, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/history",
      operationId: "listTaskVersions",
      summary: "A task's versions, newest first",
      params: TaskParams,
      query: PageQuery.strict(),
      response: page(TaskVersion),
      paginated: true,
    },
    ({ clients, params, query, ctx }) => clients.tasks.relay("taskHistory", { ...query, task_id: params.task_id }, ctx),
  );
});
