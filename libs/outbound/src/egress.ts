// Egress guard for every outbound webhook call. Checked where the socket is dialled, against the
// address it connects to: a URL check alone is defeated by a name resolving to 127.0.0.1 or by DNS
// rebinding. Node skips `lookup` for literal-IP hosts, so those are checked before the request.
import http from "node:http";
import https from "node:https";
import net from "node:net";
import type { LookupFunction } from "node:net";
import { lookupAll } from "./dns-cache.js";

export const BLOCKED_CLASSES = ["loopback", "private", "link_local", "metadata", "cgnat", "multicast", "unspecified", "reserved"] as const;
export type BlockedClass = (typeof BLOCKED_CLASSES)[number];

export const URL_REFUSALS = ["scheme", "userinfo", "invalid_url"] as const;
export type EgressRefusalReason = (typeof URL_REFUSALS)[number] | BlockedClass;

export const DELIVERY_OUTCOMES = ["delivered", "blocked", "redirect_blocked", "request_failed", "timeout"] as const;
export type DeliveryOutcome = (typeof DELIVERY_OUTCOMES)[number];

export class EgressRefused extends Error {
  override readonly name = "EgressRefused";
  readonly code = "EGRESS_BLOCKED";
  readonly reason: EgressRefusalReason;
  constructor(reason: EgressRefusalReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export interface BlockedRange {
  readonly cidr: string;
  readonly class: BlockedClass;
  readonly source: string;
}

// First matching row wins, so narrow rows come before the ranges that contain them. Every IANA
// special-purpose block that is not globally reachable, multicast, and cloud metadata endpoints.
export const BLOCKED_RANGES: readonly BlockedRange[] = [
  { cidr: "169.254.169.254/32", class: "metadata", source: "instance metadata: AWS, GCP, Azure, OpenStack, Oracle" },
  { cidr: "169.254.170.2/32", class: "metadata", source: "AWS ECS task metadata" },
  { cidr: "100.100.100.200/32", class: "metadata", source: "Alibaba Cloud instance metadata" },
  // A public-looking address, so the only row here that nothing else would block.
  { cidr: "168.63.129.16/32", class: "metadata", source: "Azure WireServer / platform DNS" },
  { cidr: "fd00:ec2::254/128", class: "metadata", source: "AWS instance metadata over IPv6" },
  { cidr: "0.0.0.0/32", class: "unspecified", source: "RFC 1122 §3.2.1.3 (this host)" },
  { cidr: "::/128", class: "unspecified", source: "RFC 4291 §2.5.2" },
  { cidr: "127.0.0.0/8", class: "loopback", source: "RFC 1122 §3.2.1.3" },
  { cidr: "::1/128", class: "loopback", source: "RFC 4291 §2.5.3" },
  { cidr: "10.0.0.0/8", class: "private", source: "RFC 1918" },
  { cidr: "172.16.0.0/12", class: "private", source: "RFC 1918" },
  { cidr: "192.168.0.0/16", class: "private", source: "RFC 1918" },
  { cidr: "fc00::/7", class: "private", source: "RFC 4193 unique-local" },
  { cidr: "fec0::/10", class: "private", source: "RFC 3879 site-local (deprecated)" },
  { cidr: "169.254.0.0/16", class: "link_local", source: "RFC 3927" },
  { cidr: "fe80::/10", class: "link_local", source: "RFC 4291 §2.5.6" },
  { cidr: "100.64.0.0/10", class: "cgnat", source: "RFC 6598 shared address space" },
  { cidr: "224.0.0.0/4", class: "multicast", source: "RFC 5771 (IANA IPv4 multicast registry)" },
  { cidr: "ff00::/8", class: "multicast", source: "RFC 4291 §2.7" },
  { cidr: "0.0.0.0/8", class: "reserved", source: "RFC 791 (this network)" },
  { cidr: "192.0.0.0/24", class: "reserved", source: "RFC 6890 IETF protocol assignments" },
  { cidr: "192.0.2.0/24", class: "reserved", source: "RFC 5737 TEST-NET-1" },
  { cidr: "192.88.99.0/24", class: "reserved", source: "RFC 7526 deprecated 6to4 relay anycast" },
  { cidr: "198.18.0.0/15", class: "reserved", source: "RFC 2544 benchmarking" },
  { cidr: "198.51.100.0/24", class: "reserved", source: "RFC 5737 TEST-NET-2" },
  { cidr: "203.0.113.0/24", class: "reserved", source: "RFC 5737 TEST-NET-3" },
  { cidr: "240.0.0.0/4", class: "reserved", source: "RFC 1112 reserved; includes 255.255.255.255 broadcast (RFC 919)" },
  { cidr: "100::/64", class: "reserved", source: "RFC 6666 discard-only" },
  // Teredo (2001::/32) sits inside this block but is classified by its client address first.
  { cidr: "2001::/23", class: "reserved", source: "RFC 2928 IETF protocol assignments (incl. 2001:2::/48 benchmarking)" },
  { cidr: "2001:db8::/32", class: "reserved", source: "RFC 3849 documentation" },
  { cidr: "3fff::/20", class: "reserved", source: "RFC 9637 documentation" },
  { cidr: "5f00::/16", class: "reserved", source: "RFC 9602 SRv6 SIDs" },
];

const matchers = BLOCKED_RANGES.map((range) => {
  const [address = "", prefix = ""] = range.cidr.split("/");
  const family = net.isIPv4(address) ? "ipv4" : "ipv6";
  const list = new net.BlockList();
  list.addSubnet(address, Number(prefix), family);
  return { list, family, class: range.class } as const;
});

function matchRange(address: string, family: "ipv4" | "ipv6"): BlockedClass | null {
  for (const m of matchers) {
    if (m.family === family && m.list.check(address, family)) return m.class;
  }
  return null;
}

/** IPv6 forms that carry an IPv4 address (mapped, NAT64, 6to4, Teredo…) are classified by that address. */
export function classifyAddress(ip: string): BlockedClass | null {
  // Every call and new connection classifies its address, and each BlockList check builds a SocketAddress.
  const known = classified.get(ip);
  if (known !== undefined) return known;
  const cls = classifyUncached(ip);
  if (classified.size >= CLASSIFIED_MAX) classified.clear();
  classified.set(ip, cls);
  return cls;
}

const classified = new Map<string, BlockedClass | null>();
const CLASSIFIED_MAX = 10_000;

function classifyUncached(ip: string): BlockedClass | null {
  if (net.isIPv4(ip)) return matchRange(ip, "ipv4");
  // A zone (fe80::1%eth0) scopes the address to an interface; the address decides the class.
  const bare = ip.split("%", 1)[0] ?? "";
  if (!net.isIPv6(ip) || !net.isIPv6(bare)) throw new TypeError(`not an IP address: ${JSON.stringify(ip)}`);
  return classifyIPv6(bare, parseIPv6(bare));
}

function classifyIPv6(text: string, g: readonly number[]): BlockedClass | null {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const last32 = ipv4From(g6, g7);
  const upper80Zero = g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0;
  // IPv4-mapped: the socket talks IPv4 to the embedded address.
  if (upper80Zero && g5 === 0xffff) return matchRange(last32, "ipv4");
  if (upper80Zero && g5 === 0) {
    if (g6 === 0 && g7 === 1) return "loopback";
    // IPv4-compatible is deprecated and never routed, so even a public embedded address stays blocked.
    return matchRange(last32, "ipv4") ?? "reserved";
  }
  // NAT64 (RFC 6052): the translator dials the embedded address.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return matchRange(last32, "ipv4");
  // Local-use NAT64 (RFC 8215) is not globally reachable whatever it embeds.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return matchRange(last32, "ipv4") ?? "reserved";
  // 6to4 (RFC 3056): the site's IPv4 address is bits 16-47.
  if (g0 === 0x2002) return matchRange(ipv4From(g1, g2), "ipv4");
  // Teredo (RFC 4380): the client's IPv4 address is bits 96-127, inverted.
  if (g0 === 0x2001 && g1 === 0) return matchRange(ipv4From(g6 ^ 0xffff, g7 ^ 0xffff), "ipv4");
  const listed = matchRange(text, "ipv6");
  if (listed !== null) return listed;
  // Only 2000::/3 is allocated for global unicast; nothing outside it is a legitimate target.
  if ((g0 & 0xe000) !== 0x2000) return "reserved";
  return null;
}

function ipv4From(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

function parseIPv6(text: string): number[] {
  const gap = text.indexOf("::");
  const head = gap >= 0 ? text.slice(0, gap) : text;
  const tail = gap >= 0 ? text.slice(gap + 2) : "";
  const groups = (part: string): number[] => {
    if (part === "") return [];
    return part.split(":").flatMap((piece) => {
      if (piece.includes(".")) {
        const [a = 0, b = 0, c = 0, d = 0] = piece.split(".").map(Number);
        return [(a << 8) | b, (c << 8) | d];
      }
      return [Number.parseInt(piece, 16)];
    });
  };
  const front = groups(head);
  const back = groups(tail);
  const zeros = gap >= 0 ? 8 - front.length - back.length : 0;
  const all = [...front, ...new Array<number>(zeros).fill(0), ...back];
  if (all.length !== 8 || all.some((n) => !Number.isInteger(n) || n < 0 || n > 0xffff)) {
    throw new TypeError(`not an IPv6 address: ${JSON.stringify(text)}`);
  }
  return all;
}

export interface EgressOptions {
  readonly allowHttp: boolean;
  /** Every blocked class except metadata. */
  readonly allowPrivate: boolean;
}

// A setting left on in a cloud deployment must not hand instance credentials to a webhook URL.
function isAllowed(cls: BlockedClass | null, allowPrivate: boolean): boolean {
  return cls === null || (allowPrivate && cls !== "metadata");
}

/** Addresses are not checked here. */
export function checkUrl(url: string, opts: { readonly allowHttp: boolean }): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EgressRefused("invalid_url", "the URL cannot be parsed");
  }
  if (parsed.protocol !== "https:" && !(opts.allowHttp && parsed.protocol === "http:")) {
    throw new EgressRefused("scheme", `scheme ${parsed.protocol} is not allowed (https only${opts.allowHttp ? " or http" : ""})`);
  }
  // Credentials in a URL end up in logs and in the Authorization header.
  if (parsed.username !== "" || parsed.password !== "") throw new EgressRefused("userinfo", "the URL must not carry a user name or password");
  if (parsed.hostname === "") throw new EgressRefused("invalid_url", "the URL has no host");
  return parsed;
}

/** Node dials literal IPs without calling `lookup`. */
export function checkLiteralHost(url: URL, opts: { readonly allowPrivate: boolean }): void {
  const host = hostOf(url);
  if (net.isIP(host) === 0) return;
  const cls = classifyAddress(host);
  if (cls !== null && !isAllowed(cls, opts.allowPrivate)) throw new EgressRefused(cls, `address ${host} is ${cls}`);
}

function hostOf(url: URL): string {
  const h = url.hostname;
  return h.startsWith("[") && h.endsWith("]") ? h.slice(1, -1) : h;
}

/**
 * Hands back only the allowed addresses of a name, so the socket (Happy Eyeballs included, which
 * asks for all of them) can only connect to a checked address.
 */
export function guardedLookup(opts: { readonly allowPrivate: boolean }): LookupFunction {
  return (hostname, options, callback) => {
    const family = options.family === "IPv4" ? 4 : options.family === "IPv6" ? 6 : typeof options.family === "number" ? options.family : 0;
    lookupAll(hostname, family, (err, addresses) => {
      if (err) {
        callback(err, "");
        return;
      }
      const allowed = addresses.filter((a) => isAllowed(classifyAddress(a.address), opts.allowPrivate));
      const first = allowed[0];
      if (first === undefined) {
        const refused = addresses[0];
        const cls = refused === undefined ? "reserved" : (classifyAddress(refused.address) ?? "reserved");
        callback(new EgressRefused(cls, `host ${hostname} resolves only to blocked addresses (${cls})`), "");
        return;
      }
      if (options.all === true) callback(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}

// An agent pools sockets by host and port only, so a socket dialled under allowPrivate must never serve a call made without it.
const agents = new Map<string, { agent: http.Agent; lookup: LookupFunction }>();

function agentFor(protocol: "http:" | "https:", allowPrivate: boolean): { agent: http.Agent; lookup: LookupFunction } {
  const key = `${protocol}${allowPrivate}`;
  const existing = agents.get(key);
  if (existing !== undefined) return existing;
  const lookup = guardedLookup({ allowPrivate });
  const agent = protocol === "https:" ? new https.Agent({ keepAlive: true, lookup }) : new http.Agent({ keepAlive: true, lookup });
  const entry = { agent, lookup };
  agents.set(key, entry);
  return entry;
}

export interface EgressTarget {
  readonly url: URL;
  readonly options: http.RequestOptions;
}

export function egressRequestOptions(url: string, opts: EgressOptions): EgressTarget {
  const parsed = checkUrl(url, opts);
  checkLiteralHost(parsed, opts);
  const protocol = parsed.protocol === "https:" ? "https:" : "http:";
  const { agent, lookup } = agentFor(protocol, opts.allowPrivate);
  return {
    url: parsed,
    options: {
      protocol,
      hostname: hostOf(parsed),
      port: parsed.port === "" ? undefined : Number(parsed.port),
      path: parsed.pathname + parsed.search,
      agent,
      lookup,
    },
  };
}

/** Past it the connection is dropped. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface PostOptions extends EgressOptions {
  readonly body: string | Uint8Array;
  readonly headers?: Readonly<Record<string, string>>;
  /** The whole call: lookup, connect, TLS, response head and the bounded body read. */
  readonly timeoutMs: number;
}

export interface PostResult {
  /** redirect_blocked: a 3xx, never followed. blocked: refused by the guard (`errorClass` is the reason). */
  readonly outcome: DeliveryOutcome;
  readonly status?: number;
  readonly durationMs: number;
  readonly errorClass?: string;
  readonly retryAfter?: string;
}

function outcomeOf(status: number): DeliveryOutcome {
  if (status >= 200 && status < 300) return "delivered";
  if (status >= 300 && status < 400) return "redirect_blocked";
  return "request_failed";
}

function errorClassOf(err: unknown): string {
  if (err instanceof EgressRefused) return err.reason;
  if (err instanceof Error) {
    const code: unknown = Reflect.get(err, "code");
    return typeof code === "string" ? code : err.name;
  }
  return "unknown";
}

/** Never rejects, never follows a redirect. */
export function postGuarded(url: string, opts: PostOptions): Promise<PostResult> {
  const started = performance.now();
  const elapsed = (): number => Math.round(performance.now() - started);
  let target: EgressTarget;
  try {
    target = egressRequestOptions(url, opts);
  } catch (err) {
    const outcome = err instanceof EgressRefused ? "blocked" : "request_failed";
    return Promise.resolve({ outcome, errorClass: errorClassOf(err), durationMs: elapsed() });
  }
  const send = target.url.protocol === "https:" ? https.request : http.request;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    let status: number | undefined;
    let retryAfter: string | undefined;
    let req: http.ClientRequest | undefined;
    const finish = (result: Omit<PostResult, "durationMs">): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: elapsed() });
    };
    const answered = (): void => {
      if (status !== undefined) finish({ outcome: outcomeOf(status), status, retryAfter });
    };
    // A stalled body counts as a timeout even after the status arrived.
    const timer = setTimeout(() => {
      finish({ outcome: "timeout", errorClass: "timeout", status, retryAfter });
      req?.destroy();
    }, opts.timeoutMs);
    try {
      req = send({
        ...target.options,
        method: "POST",
        headers: { ...opts.headers, "content-length": String(Buffer.byteLength(opts.body)) },
      });
    } catch (err) {
      // Invalid header names or values throw synchronously.
      finish({ outcome: "request_failed", errorClass: errorClassOf(err) });
      return;
    }
    req.on("error", (err) => {
      if (status !== undefined) answered();
      else finish({ outcome: err instanceof EgressRefused ? "blocked" : "request_failed", errorClass: errorClassOf(err) });
    });
    req.on("response", (res) => {
      status = res.statusCode ?? 0;
      const header = res.headers["retry-after"];
      retryAfter = typeof header === "string" ? header : undefined;
      let read = 0;
      res.on("data", (chunk: Buffer) => {
        read += chunk.length;
        if (read >= MAX_RESPONSE_BYTES) {
          answered();
          // Cheaper than draining an unbounded body to keep the socket alive.
          res.destroy();
        }
      });
      // A connection cut mid-body does not change the receiver's answer.
      res.on("end", answered);
      res.on("error", answered);
      res.on("close", answered);
    });
    req.end(opts.body);
  });
}
