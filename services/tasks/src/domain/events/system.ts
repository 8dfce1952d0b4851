import {
  type Caller,
  type EndpointEvent,
  type Event,
  type Page,
  type ReplayEventsInput,
  type ReplayEventsOutput,
  taskId,
  taskNumber,
} from "@tasksvc/contracts";
import { notFound } from "../refs.js";
import type { TasksResources } from "../resources.js";

const FEED_SCAN = { operation: "events feed", narrow: "narrow it with type, created_gte/created_lt or a smaller limit" } as const;

const nothing = () => ({ items: [], more: false, through: 0 });

export interface FeedQuery {
  limit: number;
  after?: string | undefined;
  type?: Event["type"] | undefined;
  task_id?: string | undefined;
  created_gte?: string | undefined;
  created_lt?: string | undefined;
  visible?: readonly Event["type"][] | undefined;
}

export function eventsSystem(res: TasksResources) {
  const { repos, scans } = res;
  return {
    async listEvents(c: Caller, q: FeedQuery): Promise<Page<Event>> {
      // A task whose events are all past the 30 days answers an empty page, not a 404; one in the trash keeps its events.
      const n = q.task_id === undefined ? undefined : taskNumber(q.task_id);
      if (n === null || (n !== undefined && !(await repos.trash.known(c.organizationId, n)))) throw notFound("task");
      // Matched as events carry it (`T-<n>`), whatever spelling the query used.
      return scans.runFor(c, FEED_SCAN, (until) => repos.events.list(c.organizationId, { ...q, task_id: n === undefined ? undefined : taskId(n) }, until));
    },

    /** An event of a type the caller may not see is as absent as one that does not exist. */
    async getEvent(c: Caller, id: string, visible?: readonly Event["type"][]): Promise<Event> {
      const e = await repos.events.get(c.organizationId, id);
      if (!e || (visible !== undefined && !visible.includes(e.type))) throw notFound("event");
      return e;
    },

    /** The gateway pages until `more` is false, then switches to the live events it relays, from `through` (decision 0027). */
    async replayEvents(c: Caller, i: ReplayEventsInput): Promise<ReplayEventsOutput> {
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
    },

    /** Taken into this outbox once, so it reaches the feed, the live stream and the fan-out in the event stream's one order. */
    async takeIn(e: EndpointEvent): Promise<void> {
      if (await repos.events.takeIn(e)) res.written();
    },
  };
}
export type EventsSystem = ReturnType<typeof eventsSystem>;
