import { RawJson } from "@tasksvc/contracts";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { Clients } from "../clients.js";
import type { EventStreams } from "../streams/event-streams.js";
import { EventStreamAnswer, type Resource, WithStatus } from "./operation.js";
import { noneMatch } from "./preconditions.js";

// How an operation runs once the pipeline's hooks (hooks.ts) admitted it and parsed its input:
// its forward() is called, and what it answers is sent.

export interface ResourceOptions {
  clients: Clients;
  /** The replica's live event streams (absent where a gateway serves none, as in unit tests). */
  eventStreams?: EventStreams | undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * A created resource's path from its operation's `location` template: each `{name}` is the
 * answer's field, else the path parameter, else the request body's field, percent-encoded.
 */
export function locationOf(template: string, sources: { answer: unknown; params: unknown; body: unknown }): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    for (const source of [sources.answer, sources.params, sources.body]) {
      const value = isRecord(source) ? source[name] : undefined;
      if (typeof value === "string" || typeof value === "number") return encodeURIComponent(String(value));
    }
    throw new Error(`location ${template}: no value for {${name}}`);
  });
}

/**
 * Answers with a service's reply bytes, never parsed here (decision 0020); the pipeline's onSend
 * hooks (the next cursor's signature, the Idempotency-Key outcome) see them as any other body.
 */
function sendRaw(reply: FastifyReply, result: RawJson): FastifyReply {
  return reply.type(JSON_TYPE).send(result.bytes);
}

/** The fastify plugin that serves a resource's operations, one route each, its operation in the route's config. */
export function resourcePlugin(resource: Resource): FastifyPluginAsync<ResourceOptions> {
  return async (app, opts) => {
    // Inside this resource's plugin only (fastify encapsulation): its uploads' media types are
    // handed over as the unread request stream, and the JSON path elsewhere is untouched.
    const streamed = new Set(resource.operations.filter((o) => o.kind === "stream").flatMap((o) => o.contentTypes));
    for (const type of streamed) app.addContentTypeParser(type, (_req, payload, done) => done(null, payload));
    for (const operation of resource.operations) {
      app.route({
        method: operation.method,
        url: operation.url,
        config: { operation },
        handler: async (req, reply) => {
          if (!req.prepared || !req.admitted) throw new Error(`${operation.method} ${operation.url} ran without the pipeline`);
          const result = await req.prepared.run(req.admitted, opts.clients);
          if (result instanceof EventStreamAnswer) {
            if (!opts.eventStreams) throw new Error(`${operation.method} ${operation.url}: this gateway serves no event streams`);
            await opts.eventStreams.serve(req, reply, result.request);
            return reply;
          }
          // A creation says where its resource is; the answer is read for it only then (decision 0020).
          const created = (answer: () => unknown) => {
            if (operation.location !== undefined && reply.statusCode === 201)
              reply.header("location", locationOf(operation.location, { answer: answer(), params: req.prepared?.params, body: req.body }));
          };
          if (result instanceof RawJson) {
            created(() => result.parse());
            const etag = operation.etag ? result.headers.etag : undefined;
            if (etag !== undefined) {
              reply.header("etag", etag);
              const tags = req.admitted.ifNoneMatch;
              if (tags !== undefined && !noneMatch(tags, etag)) return reply.code(304).send();
            }
            return sendRaw(reply, result);
          }
          if (!(result instanceof WithStatus)) {
            created(() => result);
            return result;
          }
          reply.code(result.status);
          created(() => result.body);
          return result.body;
        },
      });
    }
  };
}
