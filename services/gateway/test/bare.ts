import { createLogger } from "@tasksvc/logger";
import type { FastifyInstance } from "fastify";
import { buildGateway, type BuildOptions } from "../src/app.js";

/**
 * The gateway's options with no collaborators behind it (no auth, services, database or charger):
 * what the router, the edge and the hooks answer alone. A request that reached one of them would
 * fail loudly (500), which is what the tests that use this rely on.
 */
export function bareOptions(over: Partial<BuildOptions> = {}): BuildOptions {
  const unused = {} as never;
  return {
    log: createLogger({ service: "gateway-test", level: "silent" }),
    auth: unused,
    oauthIssuer: unused,
    clients: unused,
    health: unused,
    repo: unused,
    charger: unused,
    cursors: unused,
    bodyLimit: 1024,
    idempotencyLeaseMs: 1000,
    port: 8080,
    ...over,
  };
}

/** A gateway built from bareOptions (not listening: use inject()). */
export const bareGateway = (over: Partial<BuildOptions> = {}): FastifyInstance => buildGateway(bareOptions(over));
