import dns, { type LookupAddress } from "node:dns";

/**
 * Node asks the system resolver afresh for every connection, through its few libuv threads. Every
 * attempt to one endpoint, and every check of a URL, would then queue behind other lookups (a
 * resolver answering six a second made endpoint creates wait seconds): so one lookup per name at a
 * time is shared by everyone asking, and its answer kept briefly.
 */
const FOUND_MS = 30_000;
/** A name set up after its endpoint is found soon. */
const NOT_FOUND_MS = 5_000;
const MAX_NAMES = 10_000;

type Answer = { at: number; ms: number; addresses?: LookupAddress[]; error?: NodeJS.ErrnoException };
const answers = new Map<string, Answer>();
const asking = new Map<string, Array<(a: Answer) => void>>();

function remember(key: string, a: Answer): void {
  answers.delete(key);
  answers.set(key, a);
  // Insertion order: the oldest answer goes first.
  if (answers.size > MAX_NAMES) answers.delete(answers.keys().next().value as string);
}

/** Every address of the name (`all: true`), shared and cached; `family` 0 asks for both. */
export function lookupAll(hostname: string, family: number, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void): void {
  const key = `${family}/${hostname.toLowerCase()}`;
  const known = answers.get(key);
  const settle = (a: Answer) => callback(a.error ?? null, a.addresses ?? []);
  if (known !== undefined && performance.now() - known.at < known.ms) return void queueMicrotask(() => settle(known));
  const waiting = asking.get(key);
  if (waiting !== undefined) return void waiting.push(settle);
  asking.set(key, [settle]);
  dns.lookup(hostname, { family, all: true }, (err, addresses) => {
    const a: Answer = err
      ? { at: performance.now(), ms: err.code === "ENOTFOUND" ? NOT_FOUND_MS : 0, error: err }
      : { at: performance.now(), ms: FOUND_MS, addresses };
    if (a.ms > 0) remember(key, a);
    const all = asking.get(key) ?? [];
    asking.delete(key);
    for (const s of all) s(a);
  });
}
