import {
  Attachment,
  AttachmentParams,
  DeletedAttachment,
  DownloadLink,
  PageQuery,
  RegisterAttachmentBody,
  StartUploadBody,
  TaskParams,
  UploadTicket,
  page,
  type UploadTarget,
} from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export function linkTo(target: UploadTarget, origin: string, path: "/v1/uploads/" | "/v1/downloads/"): string {
  return target.kind === "direct" ? target.url : `${origin}${path}${target.capability}`;
}

// Decision 0016.
export const attachments = resource({ name: "attachments", scopes: "tasks" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/attachments/uploads",
      operationId: "startAttachmentUpload",
      summary: "Start an upload: checks the plan's file-size and storage allowances, answers where to PUT the bytes",
      params: TaskParams,
      body: StartUploadBody,
      status: 201,
      response: UploadTicket,
      idempotent: true,
      errors: ["resource_not_found"],
    },
    async ({ clients, params, body, ctx, identity, origin }) => {
      const limits = { max_file_size: identity.limits.max_file_size, storage: identity.limits.storage };
      const t = await clients.tasks.call("startUpload", { ...body, task_id: params.task_id, limits }, ctx);
      return { upload_url: linkTo(t.target, origin, "/v1/uploads/"), upload_method: "PUT" as const, file_key: t.file_key, expires_at: t.expires_at };
    },
  );
  r.op(
    {
      method: "POST",
      url: "/v1/tasks/:task_id/attachments",
      operationId: "registerAttachment",
      summary: "Register an uploaded file as an attachment of the task's current version",
      params: TaskParams,
      body: RegisterAttachmentBody,
      status: 201,
      location: "/v1/tasks/{task_id}/attachments/{id}",
      response: Attachment,
      idempotent: true,
      errors: ["resource_not_found"],
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("registerAttachment", { ...body, task_id: params.task_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/attachments",
      operationId: "listAttachments",
      summary: "List the task's attachments, newest first",
      params: TaskParams,
      query: PageQuery.strict(),
      response: page(Attachment),
      paginated: true,
      errors: ["resource_not_found"],
    },
    ({ clients, params, query, ctx }) => clients.tasks.relay("listAttachments", { ...query, task_id: params.task_id }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/tasks/:task_id/attachments/:attachment_id/download",
      operationId: "getAttachmentDownloadLink",
      summary: "A short-lived link that answers the attachment's bytes",
      params: AttachmentParams,
      response: DownloadLink,
      errors: ["resource_not_found"],
    },
    async ({ clients, params, ctx, origin }) => {
      const d = await clients.tasks.call("downloadAttachment", params, ctx);
      return { download_url: linkTo(d.target, origin, "/v1/downloads/"), expires_at: d.expires_at };
    },
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/tasks/:task_id/attachments/:attachment_id",
      operationId: "deleteAttachment",
      summary: "Delete an attachment (its bytes leave the storage allowance and the store)",
      params: AttachmentParams,
      response: DeletedAttachment,
      errors: ["resource_not_found"],
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteAttachment", params, ctx),
  );
});
