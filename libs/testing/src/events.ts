import { isDeepStrictEqual } from "node:util";
import { decodeJson, connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { isEndpointEvent, OrgEvent, type TaskEvent, taskEventsStream } from "@tasksvc/contracts";
import postgres from "postgres";
import { eventually } from "./eventually.js";
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
  const database = () => (db ??= postgres(stack.databaseUrl, { max: 1, onnotice: () => {} }));

  /**
   * A stored event, parsed with the contract its consumers use. Stricter than they are: zod drops
   * keys the schema does not name, and an event that carries more than its contract (an internal
   * column leaking into `data`) must fail a test, as it did when tests compared the raw JSON.
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

  /** Every event stored after the mark, task events and endpoints' operational events alike. */
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

  /** The task events stored after the mark (another test's endpoint events left out). */
  async function since(mark: number): Promise<TaskEvent[]> {
    return (await allSince(mark)).filter((e): e is TaskEvent => !isEndpointEvent(e));
  }

  /**
   * The stream's end once every change committed so far has reached it: the relay publishes
   * after the commit, so a mark taken while a previous change's row waits in the outbox would
   * count that change's event as one of the next.
   */
  async function mark(): Promise<number> {
    const outbox = database();
    // The outbox is shared with other files' writes: past 5 s the mark is taken anyway, and a late
    // event it then counts fails the test's own assertion.
    await eventually(async () => (await outbox<{ n: number }[]>`select count(*)::int as n from tasks.outbox`)[0]?.n === 0, {
      timeoutMs: 5000,
      intervalMs: 20,
    }).catch(() => undefined);
    return lastSeq();
  }

  return {
    mark,
    since,
    allSince,
    /**
     * Events of one organization after `mark`, once `count` of them arrived and none can follow (or
     * the deadline passed: the caller's assertion then shows what did). None can follow once the
     * organization's outbox is empty: the caller's writes committed before it asked, and the relay
     * deletes a row only after the stream stored it, so every event they cause, a duplicate
     * included, is in the stream by then.
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
