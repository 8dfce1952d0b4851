import { isIP } from "node:net";
import { parseDuration } from "@tasksvc/config";
import { z } from "zod";

/**
 * The anonymous link routes' limit per client address (decision 0016's upload and download
 * links): a fixed window counted in this replica's memory. The links carry no credential, so the
 * burst counters in Postgres (pipeline/charger.ts, per credential) have nothing to count by; a per-address
 * count needs no shared state to do its job, which is to bound what one address costs a replica
 * (a service call, a database read) and to slow the guessing of capabilities. N replicas behind a
 * load balancer let an address make up to N times the limit: the setting is per replica.
 */
export interface LinkRate {
  limit: number;
  windowMs: number;
}

/** LINK_RATE_LIMIT: `<requests>/<window>` (e.g. `300/1m`) per client address and replica, or `off`. */
export const linkRateLimitSetting = z
  .string()
  .default("300/1m")
  .transform((v, ctx): LinkRate | null => {
    if (v.trim() === "off") return null;
    const m = /^\s*(\d+)\s*\/\s*(\S+)\s*$/.exec(v);
    const limit = Number(m?.[1]);
    const windowMs = m?.[2] === undefined ? null : parseDuration(m[2]);
    if (!m || !Number.isSafeInteger(limit) || limit < 1 || windowMs === null || windowMs < 1000 || windowMs > 86_400_000) {
      ctx.addIssue({ code: "custom", message: "expected `<requests>/<window>` such as 300/1m (at least 1 request, a window from 1s to 1d), or `off`" });
      return z.NEVER;
    }
    return { limit, windowMs };
  });

const PRESETS = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * TRUST_PROXY: which peers' X-Forwarded-For the gateway believes, to know a client's address.
 * Unset or `false`: none (the peer's address is the client's). Else a comma-separated list of the
 * proxies' addresses and CIDR ranges (and `loopback`, `linklocal`, `uniquelocal`): the client is
 * the nearest address in X-Forwarded-For that is not one of them. `true` is refused (any client
 * could name its own address), and so is a hop count, which fastify no longer honours because it
 * cannot tell a proxy from a client that sends the header itself.
 */
export const trustProxySetting = z
  .string()
  .optional()
  .transform((v, ctx): false | string[] => {
    const text = v?.trim() ?? "false";
    if (text === "false") return false;
    const entries = text.split(",").map((e) => e.trim());
    const bad = entries.filter((e) => !PRESETS.has(e) && !isAddressOrRange(e));
    if (bad.length > 0) {
      const why =
        text === "true" ? " (`true` would let any client name its own address)" : /^\d+$/.test(text) ? " (a hop count cannot tell a proxy from a client)" : "";
      ctx.addIssue({
        code: "custom",
        message: `expected \`false\` or a comma-separated list of the proxies' addresses or CIDR ranges (or loopback, linklocal, uniquelocal)${why}; not an address: ${bad.join(", ")}`,
      });
      return z.NEVER;
    }
    return entries;
  });

function isAddressOrRange(text: string): boolean {
  const [address, prefix, extra] = text.split("/");
  const family = isIP(address ?? "");
  if (family === 0 || extra !== undefined) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * What a client is counted by: an IPv4 address as is (an IPv4-mapped IPv6 one as its IPv4
 * address), an IPv6 address by its /64, the smallest network one subscriber is given, so that
 * walking through the addresses of one's own network does not make a new client of each.
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped?.[1]) return mapped[1];
  if (isIP(ip) !== 6) return ip;
  const [head = "", tail = ""] = ip.split("%")[0]?.split("::") ?? [];
  const left = head === "" ? [] : head.split(":");
  const right = ip.includes("::") ? (tail === "" ? [] : tail.split(":")) : [];
  // An embedded IPv4 tail counts as two groups; it only ever sits past the /64.
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => Number.parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

/**
 * Counts requests per client in fixed windows. Windows are kept in the order they started, so the
 * expired ones are dropped from the front as requests come (no timer), and the map never holds
 * more than `maxClients`: past that the oldest window is forgotten, which can only let its client
 * through early, never refuse one wrongly.
 */
export function linkLimiter(rate: LinkRate, o: { now?: () => number; maxClients?: number } = {}) {
  const now = o.now ?? Date.now;
  const maxClients = o.maxClients ?? 100_000;
  const windows = new Map<string, { count: number; endsAt: number }>();
  return {
    /** Counts one request of this client: 0 when allowed, else the seconds until its window ends. */
    take(ip: string): number {
      const t = now();
      for (const [key, w] of windows) {
        if (w.endsAt > t) break;
        windows.delete(key);
      }
      const key = clientKey(ip);
      const w = windows.get(key);
      if (w) {
        if (w.count >= rate.limit) return Math.max(1, Math.ceil((w.endsAt - t) / 1000));
        w.count += 1;
        return 0;
      }
      if (windows.size >= maxClients) {
        const oldest = windows.keys().next();
        if (!oldest.done) windows.delete(oldest.value);
      }
      windows.set(key, { count: 1, endsAt: t + rate.windowMs });
      return 0;
    },
    /** Clients with a window open (for tests). */
    get size(): number {
      return windows.size;
    },
  };
}
