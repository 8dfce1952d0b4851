import { isIP } from "node:net";
import { parseDuration } from "@tasksvc/config";
import { z } from "zod";

/**
 * Counted in this replica's memory: the links carry no credential, and the bound is on what one
 * address costs a replica, so no shared state is needed; N replicas allow N times the limit (decision 0023).
 */
export interface LinkRate {
  limit: number;
  windowMs: number;
}

/** `<requests>/<window>` or `off`, with its default. */
export const rateLimitSetting = (fallback: string) =>
  z
    .string()
    .default(fallback)
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

export const linkRateLimitSetting = rateLimitSetting("300/1m");

const PRESETS = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * `true` is refused (any client could name its own address), and so is a hop count, which fastify
 * no longer honours because it cannot tell a proxy from a client that sends the header itself.
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

/** An IPv6 address by its /64, the smallest network one subscriber is given, so walking one's own network makes no new client. */
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
 * Windows are kept in start order, so expired ones are dropped from the front (no timer); past
 * `maxClients` the oldest is forgotten, which can only let a client through early, never refuse one.
 */
export function linkLimiter(rate: LinkRate, o: { now?: () => number; maxClients?: number } = {}) {
  const now = o.now ?? Date.now;
  const maxClients = o.maxClients ?? 100_000;
  const windows = new Map<string, { count: number; endsAt: number }>();
  return {
    /** 0 when allowed, else the seconds until its window ends. */
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
    get size(): number {
      return windows.size;
    },
  };
}
