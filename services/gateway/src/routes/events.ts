import { Event, EventParams, EventType, type Identity, ListEventsQuery, page, StreamEventsQuery, visibleEventTypes } from "@tasksvc/contracts";
import { AppError } from "@tasksvc/errors";
import { EventStreamAnswer } from "../pipeline/operation.js";
import { resource } from "../pipeline/resource.js";

/** An endpoint's operational events show its URL, which only webhooks:read may read: left out without it, and a 403 when asked for. */
function visibleTo(identity: Identity, asked: readonly EventType[] | undefined): EventType[] | undefined {
  const visible = visibleEventTypes(identity.scopes);
  const hidden = asked?.find((t) => !visible.includes(t));
  if (hidden !== undefined) throw new AppError("insufficient_scope", `Events of type ${hidden} need the scope webhooks:read, which the credential lacks.`);
  return visible.length === EventType.options.length ? undefined : visible;
}

export const events = resource({ name: "events", scope: "tasks:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/events",
      operationId: "listEvents",
      summary: "Events of the last 30 days, newest first: the bodies webhooks deliver, with their webhook-id",
      query: ListEventsQuery,
      response: page(Event),
      paginated: true,
    },
    ({ clients, query, ctx, identity }) =>
      clients.tasks.relay("listEvents", { ...query, visible: visibleTo(identity, query.type === undefined ? undefined : [query.type]) }, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/events/stream",
      operationId: "streamEvents",
      summary: "Events as they happen, as Server-Sent Events; resumes after Last-Event-ID with nothing missed and nothing twice",
      query: StreamEventsQuery,
      response: Event,
      eventStream: true,
      cost: "1 API call when opened",
    },
    async ({ query, identity, ctx }) => {
      const visible = visibleTo(identity, query.type);
      return new EventStreamAnswer({ query: { ...query, type: query.type ?? visible }, identity, ctx });
    },
  );
  r.op(
    {
      method: "GET",
      url: "/v1/events/:event_id",
      operationId: "getEvent",
      summary: "One event (its id is the delivery's webhook-id)",
      params: EventParams,
      response: Event,
    },
    ({ clients, params, ctx, identity }) => clients.tasks.relay("getEvent", { ...params, visible: visibleTo(identity, undefined) }, ctx),
  );
});
