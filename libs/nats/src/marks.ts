import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { z } from "zod";
import { decodeJson, encodeJson } from "./json.js";
import { ensureStream } from "./streams.js";

export const NamespaceMark = z.object({
  service: z.string(),
  database: z.string(),
  /** As text: it exceeds 2^53. */
  system_identifier: z.string(),
  marked_at: z.string(),
});
export type NamespaceMark = z.infer<typeof NamespaceMark>;

/** Named like the namespace's other streams, so whatever removes the namespace removes it too. */
export const namespaceMarksStream = (namespace: string) => `${namespace}_owner`;
export const namespaceMarkSubject = (namespace: string, service: string) => `${namespace}.owner.${service}`;

/** Published only if its subject has none yet, so of two starts at once exactly one makes the mark. */
export async function markNamespace(
  nc: NatsConnection,
  namespace: string,
  mark: Omit<NamespaceMark, "marked_at">,
  opts: { replicas?: number } = {},
): Promise<NamespaceMark> {
  const stream = namespaceMarksStream(namespace);
  const subject = namespaceMarkSubject(namespace, mark.service);
  await ensureStream(nc, { name: stream, subjects: [`${namespace}.owner.>`], max_msgs_per_subject: 1, num_replicas: opts.replicas ?? 1 });
  const made: NamespaceMark = { ...mark, marked_at: new Date().toISOString() };
  // On a cluster a stream just made may not answer until its leader is elected: a timeout is asked
  // again, and a publish that timed out but landed is then found as the mark (ours).
  for (let attempt = 1; ; attempt++) {
    try {
      await jetstream(nc).publish(subject, encodeJson(made), { expect: { lastSubjectSequence: 0 } });
      return made;
    } catch (e) {
      const held = await jetstreamManager(nc)
        .then((jsm) => jsm.streams.getMessage(stream, { last_by_subj: subject }))
        .catch((err: unknown) => {
          if (isTimeout(err) && attempt < MARK_ATTEMPTS) return undefined;
          throw err;
        });
      if (held === undefined || (held === null && isTimeout(e) && attempt < MARK_ATTEMPTS)) {
        await new Promise((r) => setTimeout(r, 250 * attempt));
        continue;
      }
      if (held === null) throw e;
      const parsed = NamespaceMark.safeParse(decodeJson(held.data));
      // A mark this code cannot read is still someone's.
      return parsed.success ? parsed.data : { service: mark.service, database: "(unreadable mark)", system_identifier: "?", marked_at: "?" };
    }
  }
}

const MARK_ATTEMPTS = 5;
const isTimeout = (e: unknown) => (e as { name?: unknown }).name === "TimeoutError";
