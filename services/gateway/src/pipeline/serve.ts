import { RawJson } from "@tasksvc/contracts";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { Clients } from "../clients.js";
import type { EventStreams } from "../streams/event-streams.js";
import { EventStreamAnswer, type Resource, WithStatus } from "./operation.js";
import { noneMatch } from "./preconditions.js";

export interface ResourceOptions {
  clients: Clients;
  eventStreams?: EventStreams | undefined;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

const JSON_TYPE = "application/json; charset=utf-8";

export function locationOf(template: string, sources: { answer: unknown; params: unknown; body: unknown }): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    for (const source of [sources.answer, sources.params, sources.body]) {
      const value = isRecord(source) ? source[name] : undefined;
      if (typeof value === "string" || typeof value === "number") return encodeURIComponent(String(value));
    }
    throw new Error(`location ${template}: no value for {${name}}`);
  });
}

/** Never parsed here (decision 0020): the onSend hooks see the bytes as any other body. */
function sendRaw(reply: FastifyReply, result: RawJson): FastifyReply {
  return reply.type(JSON_TYPE).send(result.bytes);
}

export function resourcePlugin(resource: Resource): FastifyPluginAsync<ResourceOptions> {
  return async (app, opts) => {
    // Inside this resource's plugin only (fastify encapsulation): the JSON path elsewhere is untouched.
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
          // The answer is read for its location only then (decision 0020).
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
