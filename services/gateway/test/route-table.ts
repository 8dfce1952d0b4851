import type { FastifyInstance } from "fastify";

/**
 * Every route a ready fastify app serves, as `{ method, url }` with fastify's own URL syntax
 * (`/v1/tasks/:task_id`), read from its router's printout: fastify has no list of its routes, and
 * an onRoute hook added after the app is built misses the routes it registered at once.
 */
export function routeTable(app: FastifyInstance): Array<{ method: string; url: string }> {
  const out: Array<{ method: string; url: string }> = [];
  // The printout is a tree: each line's depth is its prefix's width in steps of four ("│   ",
  // "├── "), its text the segment it adds to its parent's path, then its methods.
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, -]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = (m[1] ?? "").length / 4;
    stack.length = depth;
    stack.push(m[2] ?? "");
    const url = stack.join("");
    for (const method of (m[3] ?? "").split(", ")) if (/^[A-Z]+$/.test(method)) out.push({ method, url });
  }
  return out;
}
