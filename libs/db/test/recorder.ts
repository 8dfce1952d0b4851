import postgres from "postgres";
import { withDefaultUser } from "../src/index.js";

/** A statement as the driver sent it: its text, parameters and their type oids. */
export interface Sent {
  string: string;
  parameters: unknown[];
  types: unknown[];
}

/**
 * A one-connection postgres.js client that records what it sends, and `sentBy(q)`: the last
 * statement query `q` sent. Compares helpers with the hand-written statements they replace.
 */
export function recordingSql(url: string, options: { search_path?: string } = {}) {
  const sent: Sent[] = [];
  const sql = postgres(withDefaultUser(url), {
    max: 1,
    onnotice: () => {},
    ...(options.search_path === undefined ? {} : { connection: { search_path: options.search_path } }),
    debug: (_connection, string, parameters, types) => sent.push({ string, parameters: [...parameters], types: [...types] }),
  });
  async function sentBy(q: Promise<unknown>): Promise<Sent> {
    sent.length = 0;
    await q;
    const last = sent[sent.length - 1];
    if (last === undefined) throw new Error("nothing was sent");
    return last;
  }
  return { sql, sentBy };
}
