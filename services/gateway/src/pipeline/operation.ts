import type { Readable } from "node:stream";
import type { Entitlement, ErrorCode, Identity, RpcContext, Scope, StreamEventsQuery } from "@tasksvc/contracts";
import { z } from "zod";
import type { Clients } from "../clients.js";
import type { Charger } from "./charger.js";
import type { Charge } from "./limits.js";

// What an operation is: the table the router, the OpenAPI document and the route-auth tests read.
// How one runs is elsewhere (hooks.ts, serve.ts), so that reading the table loads no serving code.

/**
 * One public operation as the pipeline and the documentation see it: its HTTP shape and its
 * policy. The request pipeline (hooks.ts) reads it from the route's config, so a route file
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

/** What an event-stream operation hands the replica's live streams, once the pipeline admitted and parsed it. */
export interface StreamRequest {
  query: StreamEventsQuery;
  identity: Identity;
  ctx: RpcContext;
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

/** A resource: its operations, each with the step that parses its input (serve.ts makes its routes). */
export interface Resource {
  name: string;
  operations: readonly ServedOperation[];
}

/** A field the spec does not know (a misspelt or retired option) is a compile error, never ignored. */
type OnlySpecFields<S> = { [K in Exclude<keyof S, keyof OperationSpec>]: never };

export interface ResourceBuilder {
  op<const S extends OperationSpec>(spec: S & OnlySpecFields<S>, forward: (input: OperationInput<S>) => Promise<unknown>): void;
}
