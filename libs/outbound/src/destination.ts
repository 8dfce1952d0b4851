// Asked when an endpoint's URL is set, so a destination no call could reach is a field error then
// rather than every attempt failing for days. Calls are still checked when they dial.
import net from "node:net";
import { type BlockedClass, checkLiteralHost, checkUrl, EgressRefused, type EgressOptions, guardedLookup } from "./egress.js";

/** Past it the name counts as not resolving. */
export const DESTINATION_DNS_TIMEOUT_MS = 2000;

/** In words an API client reads after the field's name (`/url points at …`). */
export interface DestinationRefusal {
  /** A blocked address class (`loopback`, `private`, …), or a URL rule. */
  reason: string;
  message: string;
}

const CLASS_WORDS: Record<BlockedClass, string> = {
  loopback: "loopback",
  private: "private",
  link_local: "link-local",
  metadata: "cloud metadata",
  cgnat: "shared (carrier-grade NAT)",
  multicast: "multicast",
  unspecified: "unspecified",
  reserved: "reserved",
};
const PUBLIC_ONLY = "webhooks are delivered to public addresses only";

const wordsOf = (reason: string): string => (reason in CLASS_WORDS ? CLASS_WORDS[reason as BlockedClass] : "blocked");
const refusal = (e: EgressRefused, message: string): DestinationRefusal => ({ reason: e.reason, message });

/** A name that does not resolve (in time) is not refused: it may be set up later, and each call checks it again. */
export async function destinationRefusal(url: string, opts: EgressOptions, timeoutMs = DESTINATION_DNS_TIMEOUT_MS): Promise<DestinationRefusal | null> {
  let parsed: URL;
  try {
    parsed = checkUrl(url, opts);
  } catch (e) {
    if (e instanceof EgressRefused) return refusal(e, e.message);
    throw e;
  }
  const host = parsed.hostname;
  try {
    checkLiteralHost(parsed, opts);
  } catch (e) {
    if (!(e instanceof EgressRefused)) throw e;
    const words = wordsOf(e.reason);
    return refusal(e, `points at ${/^[aeiou]/.test(words) ? "an" : "a"} ${words} address (${host}): ${PUBLIC_ONLY}`);
  }
  // A literal address that passed: Node dials it without a lookup.
  if (host.startsWith("[") || net.isIP(host) !== 0) return null;
  // Names under localhost are loopback by definition (RFC 6761): no lookup, whose answer a busy
  // process could see only after its time limit, stands between them and the refusal.
  if (!opts.allowPrivate && /(^|\.)localhost\.?$/i.test(host))
    return { reason: "loopback", message: `points at ${host}, which resolves only to loopback addresses: ${PUBLIC_ONLY}` };
  const refused = await new Promise<EgressRefused | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    guardedLookup(opts)(host, { all: true }, (err) => {
      clearTimeout(timer);
      resolve(err instanceof EgressRefused ? err : null);
    });
  });
  return refused && refusal(refused, `points at ${host}, which resolves only to ${wordsOf(refused.reason)} addresses: ${PUBLIC_ONLY}`);
}
