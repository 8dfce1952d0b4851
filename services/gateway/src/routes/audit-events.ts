import { AuditEvent, ListAuditEventsQuery, page } from "@tasksvc/contracts";
import { resource } from "../pipeline/resource.js";

export const auditEvents = resource({ name: "audit-events", scope: "audit:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/audit-events",
      operationId: "listAuditEvents",
      summary: "The organization's audit log, newest first: who changed keys, members, invitations, webhooks, plans and data, hash-chained (owners and admins)",
      query: ListAuditEventsQuery,
      response: page(AuditEvent),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.keys.relay("listAuditEvents", query, ctx),
  );
});
