import { AcceptInvitationBody, systemContext } from "@tasksvc/contracts";
import { AppError, validationError } from "@tasksvc/errors";
import { httpEdgeRefused } from "@tasksvc/telemetry";
import type { FastifyInstance } from "fastify";
import type { Clients } from "../clients.js";
import { type LinkRate, linkLimiter } from "./link-limits.js";
import { clientOrigin } from "./requests.js";

export const ACCEPT_INVITATION_PATH = "/v1/invitations/accept";

/** Addresses remembered, as for the anonymous routes: the oldest is forgotten first. */
const ACCEPT_LIMIT_CLIENTS = 50_000;

export interface InvitationAcceptOptions {
  clients: Clients;
  /** Null or absent: no limit. */
  rate?: LinkRate | null | undefined;
}

/**
 * The one route that makes a member without a credential: the invitation's token is the whole
 * authorization. So it is limited per client address, before its body is read or the keys
 * service asked, and counted in this replica's memory like the link routes.
 */
export function registerInvitationAccept(app: FastifyInstance, o: InvitationAcceptOptions): void {
  app.register(async (scope) => {
    const rate = o.rate;
    if (rate) {
      const limiter = linkLimiter(rate, { maxClients: ACCEPT_LIMIT_CLIENTS });
      scope.addHook("onRequest", async (req) => {
        const wait = limiter.take(req.ip);
        if (wait > 0) {
          httpEdgeRefused.labels({ reason: "anonymous_rate" }).inc();
          throw new AppError(
            "rate_limited",
            `Too many invitation accepts from this address (at most ${rate.limit} per ${rate.windowMs / 1000} s); retry after the Retry-After delay.`,
            { retryAfter: wait },
          );
        }
      });
    }
    scope.post(ACCEPT_INVITATION_PATH, async (req, reply) => {
      const parsed = AcceptInvitationBody.safeParse(req.body);
      if (!parsed.success) throw validationError(parsed.error, "", "The request body");
      // The address and User-Agent go to the audit log, as for authenticated requests.
      const ctx = { ...systemContext(String(req.id)), ...clientOrigin(req) };
      const accepted = await o.clients.keys.call("acceptInvitation", parsed.data, ctx);
      return reply.code(201).send(accepted);
    });
  });
}
