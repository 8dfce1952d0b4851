import { isDeepStrictEqual } from "node:util";
import { decodeJson, connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { isTaskEventType, OrgEvent, type TaskEvent, taskEventsStream } from "@tasksvc/contracts";
import postgres from "postgres";
import { eventually } from "./eventually.js";
import type { StackInfo } from "./stack.js";

/** Reads the task-event stream straight from JetStream, as a consumer would see it. */
export function taskEvents(stack: StackInfo) {
  let nc: NatsConnection | undefined;
  let db: postgres.Sql | undefined;
  const stream = taskEventsStream(stack.namespace);
  const jsm = async () => jetstreamManager((nc ??= await connectNats({ url: stack.natsUrl, name: "test-events" })));
  const database = () => (db ??= postgres(stack.databaseUrl, { max: 1, onnotice: () => {} }));

  /**
   * Stricter than consumers: an event that carries more than its contract (an internal column
   * leaking into `data`) must fail a test, and zod would drop it silently.
   */
  function parseEvent(data: Uint8Array, seq: number): OrgEvent {
    const raw = decodeJson(data);
    const parsed = OrgEvent.safeParse(raw);
    if (!parsed.success) throw new Error(`event ${seq} of ${stream} is outside the event schemas: ${JSON.stringify(parsed.error.issues)}`);
    if (!isDeepStrictEqual(parsed.data, raw)) throw new Error(`event ${seq} of ${stream} carries fields outside its event schema: ${JSON.stringify(raw)}`);
    return parsed.data;
  }

  async function lastSeq(): Promise<number> {
    return (await (await jsm()).streams.info(stream)).state.last_seq;
  }

  async function allSince(mark: number): Promise<OrgEvent[]> {
    const m = await jsm();
    const last = await lastSeq();
    const out: OrgEvent[] = [];
    for (let seq = mark + 1; seq <= last; seq++) {
      const msg = await m.streams.getMessage(stream, { seq });
      if (msg) out.push(parseEvent(msg.data, seq));
    }
    return out;
  }

  async function since(mark: number): Promise<TaskEvent[]> {
    return (await allSince(mark)).filter((e): e is TaskEvent => isTaskEventType(e.type));
  }

  /**
   * The relay publishes after the commit, so a mark taken while a previous change's row waits in the
   * outbox would count that change's event as one of the next. Only the rows committed before the
   * mark are waited for: other files' later writes keep the shared outbox busy but land past the mark.
   */
  async function mark(timeoutMs = 60_000): Promise<number> {
    const outbox = database();
    const [top] = await outbox<{ seq: string | null }[]>`select max(seq)::text as seq from tasks.outbox`;
    if (top?.seq != null) {
      const upTo = top.seq;
      await eventually(async () => (await outbox<{ n: number }[]>`select count(*)::int as n from tasks.outbox where seq <= ${upTo}::bigint`)[0]?.n === 0, {
        what: "the outbox rows committed before the mark to reach the stream",
        timeoutMs,
        intervalMs: 20,
      });
    }
    return lastSeq();
  }

  return {
    mark,
    since,
    allSince,
    /**
     * Once the organization's outbox is empty none can follow: the relay deletes a row only after the
     * stream stored it, so every event the caller's writes cause is in the stream by then.
     */
    async await(mark: number, organizationId: string, count: number, timeoutMs = 5000): Promise<TaskEvent[]> {
      const outbox = database();
      const mine = async () => (await since(mark)).filter((e) => e.organization_id === organizationId);
      // The outbox first: a row published after this read is in the stream the next line reads.
      const settled = async () =>
        (await outbox<{ n: number }[]>`select count(*)::int as n from tasks.outbox where organization_id = ${organizationId}`)[0]?.n === 0 &&
        (await mine()).length >= count;
      await eventually(settled, { timeoutMs }).catch(() => undefined);
      return mine();
    },
    async close() {
      await nc?.drain();
      await db?.end({ timeout: 1 });
    },
  };
}
