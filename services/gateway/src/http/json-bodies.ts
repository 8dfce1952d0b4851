import type { FastifyBodyParser, FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** The JSON body as received: Idempotency-Key compares bodies byte for byte. */
    rawBody?: string;
  }
}

/** Fastify's JSON parser in its callback form: it answers through `done` and returns nothing. */
type CallbackBodyParser = Exclude<FastifyBodyParser<string>, (...args: never[]) => Promise<unknown>>;

/**
 * Fastify types its default JSON parser as either a callback parser or an async one (whose
 * promise would need awaiting). It is the callback one; checked once, when the gateway is built,
 * so the application/json parser below can call it with `done` and no promise to handle.
 */
function callbackParser(parser: FastifyBodyParser<string>): CallbackBodyParser {
  if (parser.length !== 3)
    throw new Error("fastify's default JSON parser no longer takes a `done` callback; update the application/json parser in http/json-bodies.ts");
  return parser as CallbackBodyParser;
}

/** Request bodies are JSON, parsed by fastify's own parser, with the text kept as `rawBody`. */
export function jsonBodies(app: FastifyInstance): void {
  // JSON only: fastify's text/plain parser would let a mislabelled body through.
  app.removeContentTypeParser("text/plain");
  // Fastify's own JSON parsing (proto-poisoning checks included), keeping the raw text.
  const parseJson = callbackParser(app.getDefaultJsonParser("error", "error"));
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    req.rawBody = body as string;
    parseJson(req, body as string, done);
  });
}
