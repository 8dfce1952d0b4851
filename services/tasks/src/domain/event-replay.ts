import type { Caller, ReplayEventsInput, ReplayEventsOutput } from "@tasksvc/contracts";
import type { Repositories } from "../repo/repositories.js";

const nothing = () => ({ items: [], more: false, through: 0 });

/**
 * A resumed live stream's past (GET /v1/events/stream with Last-Event-ID): the organization's
 * events after the one its client last received, a page at a time, in the stream's order. The
 * gateway pages until `more` is false, then switches to the live events it relays, from `through`.
 */
export function eventReplay(repos: Pick<Repositories, "stream">) {
  return async (c: Caller, i: ReplayEventsInput): Promise<ReplayEventsOutput> => {
    const org = c.organizationId;
    let from = "position" in i.from ? i.from.position : undefined;
    if (from === undefined) {
      const resume = await repos.stream.resumeAfter(org, "event_id" in i.from ? i.from.event_id : "");
      if (resume.kind === "unknown") return { ...nothing(), next: { seq: 0 }, pending: false, unknown: true };
      if (resume.kind === "pending") return { ...nothing(), next: { seq: 0 }, pending: true, unknown: false };
      from = resume.position;
    }
    const page = await repos.stream.page(org, from, i.types, i.limit);
    return { ...page, pending: false, unknown: false };
  };
}
