import { Event, EventParams, ListEventsQuery, page, StreamEventsQuery } from "@tasksvc/contracts";
import { EventStreamAnswer, resource } from "../operations.js";

/**
 * The events feed (issue 16, decision 0021): every task event of the last 30 days, as webhooks
 * deliver it, for a consumer that missed deliveries to catch up or rebuild its state; and the
 * same events live, as Server-Sent Events (decision 0027).
 */
export const events = resource({ name: "events", scope: "tasks:read" }, (r) => {
  r.op(
    {
      method: "GET",
      url: "/v1/events",
      operationId: "listEvents",
      summary: "Task events of the last 30 days, newest first: the bodies webhooks deliver, with their webhook-id",
      query: ListEventsQuery,
      response: page(Event),
      paginated: true,
    },
    ({ clients, query, ctx }) => clients.tasks.relay("listEvents", query, ctx),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/events/stream",
      operationId: "streamEvents",
      summary: "Task events as they happen, as Server-Sent Events; resumes after Last-Event-ID with nothing missed and nothing twice",
      query: StreamEventsQuery,
      response: Event,
      eventStream: true,
      cost: "1 API call when opened",
    },
    async ({ query, identity, ctx }) => new EventStreamAnswer({ query, identity, ctx }),
  );
  r.op(
    {
      method: "GET",
      url: "/v1/events/:event_id",
      operationId: "getEvent",
      summary: "One task event (its id is the delivery's webhook-id)",
      params: EventParams,
      response: Event,
    },
    ({ clients, params, ctx }) => clients.tasks.relay("getEvent", params, ctx),
  );
});
