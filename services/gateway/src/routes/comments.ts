import { Comment, CommentParams, CreateCommentBody, DeletedComment, PageQuery, page, TaskParams, UpdateCommentBody } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

/** Comments are no change to the task: no version, no ETag, so no If-Match; who may edit or delete is the tasks service's to say. */
export const comments = resource({ name: "comments", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/comments",
      operationId: "createComment",
      summary: "Comment on a task; the author and each member mentioned (`<@usr_…>`) follow it",
      params: TaskParams,
      body: CreateCommentBody,
      status: 201,
      location: "/v1/tasks/{task_id}/comments/{id}",
      response: Comment,
      idempotent: true,
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("createComment", { ...body, task_id: params.task_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/comments",
      operationId: "listComments",
      summary: "A task's comments, oldest first",
      params: TaskParams,
      query: PageQuery.strict(),
      response: page(Comment),
      paginated: true,
    },
    ({ clients, params, query, ctx }) => clients.tasks.relay("listComments", { ...query, task_id: params.task_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/comments/:comment_id",
      operationId: "getComment",
      summary: "Get a comment",
      params: CommentParams,
      response: Comment,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getComment", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/tasks/:task_id/comments/:comment_id",
      operationId: "updateComment",
      summary: "Edit a comment's body (its author only)",
      params: CommentParams,
      body: UpdateCommentBody,
      response: Comment,
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("updateComment", { ...params, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/tasks/:task_id/comments/:comment_id",
      operationId: "deleteComment",
      summary: "Delete a comment (its author, or an owner or admin of the organization)",
      params: CommentParams,
      response: DeletedComment,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteComment", params, ctx),
  );
});
