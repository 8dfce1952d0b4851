import { Member, PageQuery, page, RemovedMember, UpdateMemberBody, UserIdParams } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const members = resource({ name: "members", scopes: "members" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/members",
      operationId: "listMembers",
      summary: "List the organization's members",
      query: PageQuery.strict(),
      response: page(Member),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.keys.relay("listMembers", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/members/:user_id",
      operationId: "getMember",
      summary: "Get a member (a former member is not found)",
      params: UserIdParams,
      response: Member,
    },
    ({ clients, params, ctx }) => clients.keys.relay("getMember", params, ctx),
  );
  r.op(
    {
      method: "PATCH",
      url: "/v1/members/:user_id",
      operationId: "updateMember",
      summary: "Change a member's role (owners and admins; only an owner grants or takes owner)",
      params: UserIdParams,
      body: UpdateMemberBody,
      response: Member,
      errors: ["last_owner"],
    },
    ({ clients, params, body, ctx }) => clients.keys.relay("updateMember", { ...params, ...body }, ctx),
  );
  r.op(
    {
      method: "DELETE",
      url: "/v1/members/:user_id",
      operationId: "removeMember",
      summary: "Remove a member, or leave (their keys and tokens stop; their tasks stay)",
      params: UserIdParams,
      response: RemovedMember,
      errors: ["last_owner"],
    },
    ({ clients, params, ctx }) => clients.keys.relay("deleteMember", params, ctx),
  );
});
