import { taskEventSubject, type TaskEventType } from "@tasksvc/contracts";
import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { encodeJson, type JetStreamClient } from "@tasksvc/nats";

export interface RelayOptions {
  db: Database;
  js: JetStreamClient;
  namespace: string;
  log: Logger;
  /** How often to look for rows no local write announced (other replicas, a crashed relay). */
  pollMs?: number;
  batch?: number;
}

/**
 * Publishes outbox rows to JetStream in commit order, then deletes them (DESIGN.md section 5).
 *
 * - One relay at a time per database: a transaction-scoped advisory lock, tried without waiting,
 *   so every replica runs a relay and one of them works (keeps the stream in outbox order).
 * - Rows are deleted only after JetStream acknowledged them, in the same transaction that read
 *   them: a crash between publish and delete leaves the rows, which are published again with the
 *   same Nats-Msg-Id (the event id), and the stream drops the duplicate (duplicate window 1 h).
 *   For the same reason the delete commits asynchronously: losing it re-sends, never loses.
 */
export function startRelay(opts: RelayOptions) {
  const pollMs = opts.pollMs ?? 500;
  const batch = opts.batch ?? 256;
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = false;

  async function drainOnce(): Promise<number> {
    return opts.db.tx(async (t) => {
      // The lock and the read in one round trip; `locked` false means another relay holds it.
      const rows = await t<{ locked: boolean; seq: string | null; event_id: string; type: TaskEventType; payload: unknown }[]>`
        select l.locked, o.seq::text as seq, o.event_id, o.type, o.payload
        from (select pg_try_advisory_xact_lock(hashtextextended('tasks.outbox.relay', 0)) as locked) l
        left join lateral (select * from outbox where l.locked order by outbox.seq limit ${batch}) o on true
        order by o.seq`;
      if (!rows[0]?.locked) return -1;
      if (rows[0].seq === null) return 0;
      // Sent in outbox order on one connection, so the stream stores them in that order; the acks
      // are awaited together. (Only a publish the client must retry could land out of order.)
      await Promise.all(rows.map((r) => opts.js.publish(taskEventSubject(opts.namespace, r.type), encodeJson(r.payload), { msgID: r.event_id })));
      // A lost delete (database crash) only re-sends rows the stream then drops as duplicates.
      await t`
        delete from outbox using (select set_config('synchronous_commit', 'off', true)) as commit_mode
        where seq = any(${rows.map((r) => r.seq!)}::bigint[])`;
      return rows.length;
    }) as Promise<number>;
  }

  const loop = (async () => {
    while (!stopped) {
      pending = false;
      let n = 0;
      try {
        n = await drainOnce();
      } catch (err) {
        opts.log.warn({ err }, "outbox relay failed; retrying");
      }
      if (n >= batch || (n >= 0 && pending)) continue;
      if (n < 0 && pending) {
        // Another replica's relay holds the lock; it will see these rows, but look again soon.
        await new Promise((res) => setTimeout(res, 25));
        continue;
      }
      await new Promise<void>((res) => {
        const timer = setTimeout(res, pollMs);
        wake = () => {
          clearTimeout(timer);
          res();
        };
      });
      wake = undefined;
    }
  })();

  return {
    /** A local transaction committed outbox rows: publish now rather than at the next poll. */
    notify(): void {
      pending = true;
      wake?.();
    },
    async stop(): Promise<void> {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
