import { isDeepStrictEqual } from "node:util";
import { decodeJson, connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { TaskEvent, taskEventsStream } from "@tasksvc/contracts";
import postgres from "postgres";
import type { StackInfo } from "./stack.js";

/**
 * Reads the task-event stream of a test run straight from JetStream (what a consumer would see).
 * `mark()` remembers the stream's end; `since(mark)` returns every event stored after it.
 */
export function taskEvents(stack: StackInfo) {
  let nc: NatsConnection | undefined;
  let db: postgres.Sql | undefined;
  const stream = taskEventsStream(stack.namespace);
  const jsm = async () => jetstreamManager((nc ??= await connectNats({ url: stack.natsUrl, name: "test-events" })));

  /**
   * A stored event, parsed with the contract its consumers use. Stricter than they are: zod drops
   * keys the schema does not name, and an event that carries more than its contract (an internal
   * column leaking into `data`) must fail a test, as it did when tests compared the raw JSON.
   */
  function parseEvent(data: Uint8Array, seq: number): TaskEvent {
    const raw = decodeJson(data);
    const parsed = TaskEvent.safeParse(raw);
    if (!parsed.success) throw new Error(`event ${seq} of ${stream} is outside the TaskEvent schema: ${JSON.stringify(parsed.error.issues)}`);
    if (!isDeepStrictEqual(parsed.data, raw)) throw new Error(`event ${seq} of ${stream} carries fields outside the TaskEvent schema: ${JSON.stringify(raw)}`);
    return parsed.data;
  }

  async function lastSeq(): Promise<number> {
    return (await (await jsm()).streams.info(stream)).state.last_seq;
  }

  async function since(mark: number): Promise<TaskEvent[]> {
    const m = await jsm();
    const last = await lastSeq();
    const out: TaskEvent[] = [];
    for (let seq = mark + 1; seq <= last; seq++) {
      const msg = await m.streams.getMessage(stream, { seq });
      if (msg) out.push(parseEvent(msg.data, seq));
    }
    return out;
  }

  /**
   * The stream's end once every change committed so far has reached it: the relay publishes
   * after the commit, so a mark taken while a previous change's row waits in the outbox would
   * count that change's event as one of the next.
   */
  async function mark(): Promise<number> {
    db ??= postgres(stack.databaseUrl, { max: 1, onnotice: () => {} });
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const [row] = await db<{ n: number }[]>`select count(*)::int as n from tasks.outbox`;
      if (row?.n === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    return lastSeq();
  }

  return {
    mark,
    since,
    /**
     * Events of one organization after `mark`, once `count` of them arrived (or the deadline
     * passed), plus a settle period so that a duplicate would have arrived too.
     */
    async await(mark: number, organizationId: string, count: number, timeoutMs = 5000): Promise<TaskEvent[]> {
      const deadline = Date.now() + timeoutMs;
      let got: TaskEvent[] = [];
      for (;;) {
        got = (await since(mark)).filter((e) => e.organization_id === organizationId);
        if (got.length >= count || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 700));
      return (await since(mark)).filter((e) => e.organization_id === organizationId);
    },
    async close() {
      await nc?.drain();
      await db?.end({ timeout: 1 });
    },
  };
}
