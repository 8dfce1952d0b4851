// The egress guard asked ahead of time: would it refuse calls to this URL? Used when an endpoint's
// URL is set, so that a destination no call could reach is refused then, as a field error, instead
// of failing every attempt for days. Calls are still checked when they dial (addresses change).
import net from "node:net";
import { type BlockedClass, checkLiteralHost, checkUrl, EgressRefused, type EgressOptions, guardedLookup } from "./egress.js";

/** How long a destination check waits for DNS; past it the name counts as not resolving. */
export const DESTINATION_DNS_TIMEOUT_MS = 2000;

/** Why the guard would refuse a destination, in words an API client reads after the field's name (`/url points at …`). */
export interface DestinationRefusal {
  /** The guard's reason: a blocked address class (`loopback`, `private`, …), or a URL rule. */
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

/**
 * What the guard would refuse about `url` before any call: the URL rules, a host that is a
 * blocked address, or a name whose every address is blocked (the guard dials only allowed ones).
 * A name that does not resolve, or not within `timeoutMs`, is not refused: it may be set up
 * later, and each call checks it again.
 */
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
  const refused = await new Promise<EgressRefused | null>((resolve) => {
    const timer = setTimeout(() => resolve(null), timeoutMs);
    guardedLookup(opts)(host, { all: true }, (err) => {
      clearTimeout(timer);
      resolve(err instanceof EgressRefused ? err : null);
    });
  });
  return refused && refusal(refused, `points at ${host}, which resolves only to ${wordsOf(refused.reason)} addresses: ${PUBLIC_ONLY}`);
}
