import { RawJson, type Entitlement, type ErrorCode, type Identity, type RpcContext, type Scope } from "@tasksvc/contracts";
import { noneMatch } from "./policies/preconditions.js";
import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { Readable } from "node:stream";
import { AppError, validationError } from "@tasksvc/errors";
import { z } from "zod";
import type { Clients } from "./clients.js";
import type { EventStreams, StreamRequest } from "./streams/event-streams.js";
import type { Charge, Charger } from "./policies/limits.js";

/**
 * One public operation as the pipeline and the documentation see it: its HTTP shape and its
 * policy. The request pipeline (pipeline.ts) reads it from the route's config, so a route file
 * states what an operation is and never how authentication, charging or idempotency run.
 */
export interface Operation {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  url: string;
  /** The OpenAPI operationId, as a person would type it (`listTasks`, `rotateWebhookSecret`); unique. */
  operationId: string;
  /** The resource it belongs to: the OpenAPI tag. */
  resource: string;
  scope: Scope;
  entitlement: Entitlement;
  /**
   * How the request body arrives: "json", parsed by the gateway's JSON parser and checked by
   * `body`; or "stream", an upload the operation reads itself (media types in `contentTypes`).
   */
  kind: "json" | "stream";
  /** The media types a "stream" operation accepts (registered in its resource's plugin only). */
  contentTypes: string[];
  params?: z.ZodType;
  query: z.ZodType;
  body?: z.ZodType;
  status: number;
  /** The success body's schema (OpenAPI and response tests). */
  response: z.ZodType;
  /**
   * Spec (IK): accepts an Idempotency-Key. The service it forwards to must record the key with
   * its result in its own transaction (DESIGN.md section 1): the gateway's record is only a fast
   * path, which commits asynchronously and whose claim outlives only this replica's own wait
   * (decisions 0008 and 0011).
   */
  idempotent: boolean;
  /**
   * The success body holds a secret shown once (a signing secret): the gateway's record keeps the
   * status only, and a replay is forwarded to the service, whose record keeps it sealed
   * (decision 0015). Only on an idempotent operation.
   */
  secretInResponse: boolean;
  /** A cursor list: `after` is verified and unwrapped, `next_cursor` signed and bound to the query. */
  paginated: boolean;
  /** Where a paginated operation's `after` and the rest of its list's parameters are: the query, or the JSON body (a search). */
  cursorIn: "query" | "body";
  /** The answer is one task: its ETag, which the service puts in its reply's headers, is sent with it. */
  etag: boolean;
  /** The conditional header it honours: If-Match (checked by the service) or If-None-Match (304). */
  preconditions: "if-match" | "if-none-match" | undefined;
  /** What a call costs against the limits, as the reference says it: "1 API call" unless stated (a batch counts its items). */
  cost: string;
  /** Count this call alone, after giving back this replica's unspent reserved calls (0007). */
  exactCharge: boolean;
  /** The answer is a live stream of Server-Sent Events (text/event-stream), not JSON. */
  eventStream: boolean;
  /** One line for the OpenAPI document. */
  summary: string;
  /** Error codes this operation can answer beyond the pipeline's own (OpenAPI). */
  errors: ErrorCode[];
  /** Other success statuses the operation may answer with (`withStatus`), and what they mean. */
  otherStatuses: Record<number, string>;
  /**
   * Where a 201's created resource is, sent as its Location header: a path whose `{name}`s are
   * filled from the answer's fields, else the path parameters, else the request body's fields
   * (`/v1/tasks/{id}`). Only on an operation whose status is 201.
   */
  location?: string;
}

/** No query parameters: an unknown one is a 400, like an unknown body field. */
export const NoQuery = z.strictObject({});

/** A scope family with a read and a write scope (`tasks`: tasks:read and tasks:write). */
export type ScopeFamily = { [S in Scope]: S extends `${infer F}:read` ? (`${F}:write` extends Scope ? F : never) : never }[Scope];

/**
 * What a resource states once for all its operations: its name (the OpenAPI tag), the scope its
 * operations require, and the plan entitlement they need (`public_api`, which every plan has,
 * unless stated: a paid feature names its own). The scope is one for every operation (`scope`),
 * or a family (`scopes`) whose reads (GET) require `<family>:read` and other methods `<family>:write`.
 */
export type ResourceDefaults = { name: string; entitlement?: Entitlement } & ({ scope: Scope; scopes?: never } | { scopes: ScopeFamily; scope?: never });

/** What every operation states itself. */
type Stated = "method" | "url" | "operationId" | "summary" | "response";

/**
 * How a route file describes an operation: the `Operation` without its resource, where only
 * `Stated` is required. Everything else is stated only where it differs from the resource's
 * defaults (scope, entitlement) or the house defaults of `operationOf`: JSON, no query
 * parameters, status 200, neither idempotent nor paginated.
 */
export type OperationSpec = Pick<Operation, Stated> & Partial<Omit<Operation, Stated | "resource">>;

/** An operation's input as its own schemas parse it (undefined where it declares none). */
export interface InputOf<S extends OperationSpec> {
  params: S extends { params: infer P extends z.ZodType } ? z.output<P> : undefined;
  query: S extends { query: infer Q extends z.ZodType } ? z.output<Q> : z.output<typeof NoQuery>;
  body: S extends { kind: "stream" } ? Readable : S extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
}

/** What the pipeline establishes before an operation runs: the caller, its charge, the clients. */
export interface Admitted {
  ctx: RpcContext;
  identity: Identity;
  /** This call's charge: the counters right after it was counted; null for an Idempotency-Key replay (never charged). */
  charge: Charge | null;
  /** How clients reach the gateway (PUBLIC_BASE_URL, else http://localhost:<port>; never the request's Host): for links. */
  origin: string;
  /** For an operation that counts more than one call (a batch: one per item against each limit). */
  charger: Pick<Charger, "chargeItems">;
  /** The entity tags of If-None-Match, where the operation honours it (answered 304 here). */
  ifNoneMatch?: string[] | undefined;
}

export type OperationInput<S extends OperationSpec> = InputOf<S> & Admitted & { clients: Clients };

/** A forward() result whose status differs from the operation's usual one (200 "already there" vs 201). */
export class WithStatus {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

/** What an event-stream operation answers: the replica's streams take the request over (streams/). */
export class EventStreamAnswer {
  constructor(readonly request: StreamRequest) {}
}

/** The request as received, before the operation's schemas. */
export interface RawInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

/**
 * Turns a signed cursor back into the service's keyset position (the pipeline's cursor policy):
 * checked against the parsed query at once, and against the parsed path parameters by the
 * function it returns, once the path is parsed.
 */
export type UnwrapCursor = (query: Record<string, unknown>, after: string) => (params: unknown) => string;

/**
 * An operation whose input has been parsed and checked: what the handler runs. The parsed values
 * stay inside the closure with their types; the pipeline only sees the list's parameters (the
 * query, or a search's body) and the path parameters, to sign cursors.
 */
export interface Prepared {
  query: unknown;
  params: unknown;
  run(admitted: Admitted, clients: Clients): Promise<unknown>;
}

/** An operation with the step that parses its input (typed by its own schemas). */
export interface ServedOperation extends Operation {
  prepare(raw: RawInput, unwrapCursor: UnwrapCursor): Prepared;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /** Set on every public operation's route; the pipeline's hooks act only where it is. */
    operation?: ServedOperation;
  }
  interface FastifyRequest {
    /** The caller, once authenticated, charged and authorized (pipeline.ts). */
    admitted?: Admitted;
    /** The operation with its input parsed (pipeline.ts). */
    prepared?: Prepared;
  }
}

export interface ResourceOptions {
  clients: Clients;
  /** The replica's live event streams (absent where a gateway serves none, as in unit tests). */
  eventStreams?: EventStreams | undefined;
}

/** A resource's routes: its operations (for documentation) and the fastify plugin that serves them. */
export interface Resource {
  name: string;
  operations: readonly Operation[];
  plugin: FastifyPluginAsync<ResourceOptions>;
}

/** A field the spec does not know (a misspelt or retired option) is a compile error, never ignored. */
type OnlySpecFields<S> = { [K in Exclude<keyof S, keyof OperationSpec>]: never };

export interface ResourceBuilder {
  op<const S extends OperationSpec>(spec: S & OnlySpecFields<S>, forward: (input: OperationInput<S>) => Promise<unknown>): void;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parse(schema: z.ZodType, value: unknown, what: string): unknown {
  const r = schema.safeParse(value);
  if (!r.success) throw validationError(r.error, "", what);
  return r.data;
}

/**
 * Parses a request's input with an operation's schemas, in the order the pipeline promises:
 * query, then its cursor, then path (and then the cursor's binding to the path), then body. The
 * overload states what the implementation does: each value has its schema's output type, or is
 * undefined where the operation has none.
 */
function parseInput<S extends OperationSpec>(spec: S, paginated: boolean, raw: RawInput, unwrapCursor: UnwrapCursor): InputOf<S>;
function parseInput(spec: OperationSpec, paginated: boolean, raw: RawInput, unwrapCursor: UnwrapCursor): { params: unknown; query: unknown; body: unknown } {
  const query = parse(spec.query ?? NoQuery, raw.query ?? {}, "The query string");
  const position =
    paginated && spec.cursorIn !== "body" && isRecord(query) && typeof query["after"] === "string" ? unwrapCursor(query, query["after"]) : undefined;
  const params = spec.params ? parse(spec.params, raw.params ?? {}, "The path") : undefined;
  if (position && isRecord(query)) query["after"] = position(params);
  let body: unknown;
  if (spec.kind === "stream") {
    // Only the operation's own media types reach it as a stream; a JSON body here is the wrong kind.
    if (!(raw.body instanceof Readable))
      throw new AppError("unsupported_media_type", `This operation takes a body of type ${(spec.contentTypes ?? []).join(" or ")}.`);
    body = raw.body;
  } else if (spec.body) {
    body = parse(spec.body, raw.body, "The request body");
    // A search's cursor is bound to the rest of its body, as a list's is to its query.
    if (paginated && spec.cursorIn === "body" && isRecord(body) && typeof body["after"] === "string") body["after"] = unwrapCursor(body, body["after"])(params);
  }
  return { params, query, body };
}

/** The scope an operation of this resource requires, unless it states its own. */
function scopeOf(defaults: ResourceDefaults, method: Operation["method"]): Scope {
  if (defaults.scopes === undefined) return defaults.scope;
  return method === "GET" ? `${defaults.scopes}:read` : `${defaults.scopes}:write`;
}

/** An operation with every default filled in: the house's, then its resource's, then what it states. */
function operationOf(spec: OperationSpec, defaults: ResourceDefaults): Operation {
  // The gateway's Idempotency-Key compares bodies byte for byte, which a stream it never buffers
  // does not allow; an upload that needs a key must bring a digest of its own.
  if (spec.kind === "stream" && (spec.idempotent || spec.body))
    throw new Error(`${spec.method} ${spec.url}: a stream operation has no body schema and no Idempotency-Key`);
  // Only an Idempotency-Key outcome is held back and forwarded again; elsewhere the flag would do nothing.
  if (spec.secretInResponse && !spec.idempotent) throw new Error(`${spec.method} ${spec.url}: secretInResponse is for an idempotent operation`);
  if (spec.location !== undefined && spec.status !== 201) throw new Error(`${spec.method} ${spec.url}: a location is for an operation that answers 201`);
  return {
    kind: "json",
    contentTypes: spec.kind === "stream" ? ["application/octet-stream"] : ["application/json"],
    query: NoQuery,
    status: 200,
    idempotent: false,
    secretInResponse: false,
    paginated: false,
    cursorIn: "query",
    etag: false,
    preconditions: undefined,
    exactCharge: false,
    eventStream: false,
    cost: "1 API call",
    errors: [],
    otherStatuses: {},
    resource: defaults.name,
    scope: scopeOf(defaults, spec.method),
    entitlement: defaults.entitlement ?? "public_api",
    ...spec,
  };
}

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

/**
 * Declares a resource: its defaults once (name, scope, entitlement), then its operations, each
 * stating only what differs. Each forward() is typed by its own operation's schemas:
 * `prepare` parses the input inside the operation's own generic scope and keeps the typed values
 * in a closure, so the table of operations holds no generic and nothing is cast.
 */
export function resource(defaults: ResourceDefaults, define: (r: ResourceBuilder) => void): Resource {
  const served: ServedOperation[] = [];
  define({
    op(spec, forward) {
      const operation = operationOf(spec, defaults);
      served.push({
        ...operation,
        prepare(raw, unwrapCursor) {
          const input = parseInput(spec, operation.paginated, raw, unwrapCursor);
          // Built field by field, not by spreading: this runs on every request (decision 0012).
          return {
            query: operation.cursorIn === "body" ? input.body : input.query,
            params: input.params,
            run: (admitted, clients) =>
              forward({
                params: input.params,
                query: input.query,
                body: input.body,
                ctx: admitted.ctx,
                identity: admitted.identity,
                charge: admitted.charge,
                origin: admitted.origin,
                charger: admitted.charger,
                clients,
              }),
          };
        },
      });
    },
  });
  return {
    name: defaults.name,
    operations: served,
    plugin: async (app, opts) => {
      // Inside this resource's plugin only (fastify encapsulation): its uploads' media types are
      // handed over as the unread request stream, and the JSON path elsewhere is untouched.
      const streamed = new Set(served.filter((o) => o.kind === "stream").flatMap((o) => o.contentTypes));
      for (const type of streamed) app.addContentTypeParser(type, (_req, payload, done) => done(null, payload));
      for (const operation of served) {
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
    },
  };
}
