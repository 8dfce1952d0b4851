import postgres from "postgres";
import { afterAll, inject } from "vitest";
import { taskEvents } from "./events.js";
import { factories } from "./factories.js";
import { api } from "./http.js";
import { gatewayUrl } from "./stack.js";

/** Closed after the file's tests. */
export function e2eContext() {
  const stack = inject("stack");
  const db = postgres(stack.databaseUrl, { max: 2, onnotice: () => {} });
  const ctx = {
    stack,
    gw: api(gatewayUrl(stack)),
    gw2: api(gatewayUrl(stack, 1)),
    f: factories(stack),
    events: taskEvents(stack),
    db,
  };
  afterAll(async () => {
    await ctx.f.close();
    await ctx.events.close();
    await db.end({ timeout: 1 });
  });
  return ctx;
}
