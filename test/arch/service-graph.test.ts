import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as contracts from "@tasksvc/contracts";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sources(p);
    return p.endsWith(".ts") ? [p] : [];
  });
}

/** The service each RPC catalog belongs to, by its export name (`tasksRpc` → "tasks"). */
const catalogs = new Map<string, string>(
  Object.entries(contracts).flatMap(([name, v]) =>
    name.endsWith("Rpc") && typeof v === "object" && v !== null && "service" in v && typeof v.service === "string" ? [[name, v.service]] : [],
  ),
);

/** Who calls whom at run time: a service whose source makes a client of another's catalog. */
const calls: Array<[string, string]> = readdirSync(join(root, "services"))
  .filter((d) => d !== "gateway")
  .flatMap((service) => {
    const text = sources(join(root, "services", service, "src"))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    const called = [...text.matchAll(/\bclient\(\s*(?:\w+,\s*)?(\w+Rpc)\b/g)].map((m) => catalogs.get(m[1] ?? ""));
    return [...new Set(called)].flatMap((c) => (c === undefined || c === service ? [] : [[service, c] as [string, string]]));
  });

/**
 * Pairs that call each other by decision: delivery is the webhooks service's egress arm (it asks
 * for attempts to make; the webhooks service asks it for the synchronous test event and verify).
 * The two are one subsystem split so that only delivery makes outbound calls.
 */
const ACCEPTED = new Set(["delivery↔webhooks"]);

describe("the services' run-time dependencies", () => {
  it("when services call each other by RPC, then no two call each other (the boards service depends on tasks, never the reverse), but for the accepted pair", () => {
    expect(calls).toContainEqual(["boards", "tasks"]);
    const loops = calls
      .filter(([a, b]) => calls.some(([c, d]) => c === b && d === a) && a < b)
      .map(([a, b]) => `${a}↔${b}`)
      .filter((pair) => !ACCEPTED.has(pair));
    expect(loops, JSON.stringify(calls)).toEqual([]);
  });
});
