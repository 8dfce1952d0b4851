import { decodeJson, connectNats, jetstreamManager, type NatsConnection } from "@tasksvc/nats";
import { taskEventsStream, type TaskEvent } from "@tasksvc/contracts";
import type { StackInfo } from "./stack.js";

/**
 * Reads the task-event stream of a test run straight from JetStream (what a consumer would see).
 * `mark()` remembers the stream's end; `since(mark)` returns every event stored after it.
 */
export function taskEvents(stack: StackInfo) {
  let nc: NatsConnection | undefined;
  const stream = taskEventsStream(stack.namespace);
  const jsm = async () => jetstreamManager((nc ??= await connectNats({ url: stack.natsUrl, name: "test-events" })));

  async function lastSeq(): Promise<number> {
    return (await (await jsm()).streams.info(stream)).state.last_seq;
  }

  async function since(mark: number): Promise<TaskEvent[]> {
    const m = await jsm();
    const last = await lastSeq();
    const out: TaskEvent[] = [];
    for (let seq = mark + 1; seq <= last; seq++) {
      const msg = await m.streams.getMessage(stream, { seq });
      if (msg) out.push(decodeJson(msg.data) as TaskEvent);
    }
    return out;
  }

  return {
    mark: lastSeq,
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
    },
  };
}
