import { CreateCustomFieldBody, CustomField, CustomFieldParams, DeletedCustomField, PageQuery, UpdateCustomFieldBody, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

// Fields are read by whoever reads tasks, and defined like projects and labels: by holders of projects:write.
export const customFields = resource({ name: "custom-fields", scopes: "projects" }, (r) => {
  r.op(
    {
      method: "POST",
      url: "/v1/custom-fields",
      operationId: "createCustomField",
      summary: "Create a custom field (key unique in the organization; options for select and multi_select)",
      body: CreateCustomFieldBody,
      status: 201,
      location: "/v1/custom-fields/{id}",
      response: CustomField,
      idempotent: true,
    },
    ({ clients, body, ctx }) => clients.tasks.relay("createCustomField", body, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/custom-fields",
      operationId: "listCustomFields",
      summary: "List custom fields, oldest first",
      scope: "tasks:read",
      query: PageQuery.strict(),
      response: page(CustomField),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listCustomFields", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/custom-fields/:field_id",
      operationId: "getCustomField",
      summary: "Get a custom field",
      scope: "tasks:read",
      params: CustomFieldParams,
      response: CustomField,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getCustomField", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/custom-fields/:field_id",
      operationId: "updateCustomField",
      summary: "Update a custom field's name, description or options (its key and type are fixed)",
      params: CustomFieldParams,
      body: UpdateCustomFieldBody,
      response: CustomField,
    },
    ({ clients, params, body, ctx }) => clients.tasks.relay("updateCustomField", { field_id: params.field_id, patch: body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/custom-fields/:field_id",
      operationId: "deleteCustomField",
      summary: "Delete a custom field; its values are removed from every task",
      params: CustomFieldParams,
      response: DeletedCustomField,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("deleteCustomField", params, ctx),
  );
});
