import { Member, PageQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const members = resource({ name: "members", scope: "members:read" }, (r) => {
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
});
