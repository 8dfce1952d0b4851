import type { FastifyBodyParser, FastifyInstance } from "fastify";

declare module "fastify" {
  interface FastifyRequest {
    /** Idempotency-Key compares bodies byte for byte. */
    rawBody?: string;
  }
}

type CallbackBodyParser = Exclude<FastifyBodyParser<string>, (...args: never[]) => Promise<unknown>>;

/** Fastify types its default JSON parser as either form; checked once, at build, so it is called with `done` and no promise to handle. */
function callbackParser(parser: FastifyBodyParser<string>): CallbackBodyParser {
  if (parser.length !== 3)
    throw new Error("fastify's default JSON parser no longer takes a `done` callback; update the application/json parser in http/json-bodies.ts");
  return parser as CallbackBodyParser;
}

export function jsonBodies(app: FastifyInstance): void {
  // JSON only: fastify's text/plain parser would let a mislabelled body through.
  app.removeContentTypeParser("text/plain");
  // Fastify's own JSON parsing keeps its proto-poisoning checks.
  const parseJson = callbackParser(app.getDefaultJsonParser("error", "error"));
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) => {
    req.rawBody = body as string;
    parseJson(req, body as string, done);
  });
}
