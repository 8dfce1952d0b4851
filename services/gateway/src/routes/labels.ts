import { CreateLabelBody, DeletedLabel, LabelParams, PageQuery, TaskLabel, UpdateLabelBody, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// Labels are read by whoever reads tasks, and defined like projects: by holders of projects:write.
export const labels = resource({ name: "labels", scopes: "projects" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/labels",
      operationId: "createLabel",
      summary: "Create a label (name unique in the organization ignoring case)",
      body: CreateLabelBody,
      status: 201,
      location: "/v1/labels/{id}",
      response: TaskLabel,
      idempotent: true,
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createLabel", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/labels",
      operationId: "listLabels",
      summary: "List labels by name",
      scope: "tasks:read",
      query: PageQuery.strict(),
      response: page(TaskLabel),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listLabels", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/labels/:label_id",
      operationId: "getLabel",
      summary: "Get a label",
      scope: "tasks:read",
      params: LabelParams,
      response: TaskLabel,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getLabel", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/labels/:label_id",
      operationId: "updateLabel",
      summary: "Update a label's name, colour or description",
      params: LabelParams,
      body: UpdateLabelBody,
      response: TaskLabel,
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("updateLabel", { label_id: params.label_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/labels/:label_id",
      operationId: "deleteLabel",
      summary: "Delete a label; it is removed from every task that carries it",
      params: LabelParams,
      response: DeletedLabel,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteLabel", params, ctx),
  );
});
