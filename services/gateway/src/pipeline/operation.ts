import type { Readable } from "node:stream";
import type { Entitlement, ErrorCode, Identity, RpcContext, Scope, StreamEventsQuery } from "@tasksvc/contracts";
import { z } from "zod";
import type { Clients } from "../clients.js";
import type { Charger } from "./charger.js";
import type { Charge } from "./limits.js";

// The table the router, the OpenAPI document and the route-auth tests read; how one runs is
// elsewhere, so that reading the table loads no serving code.

/** A route file states what an operation is and never how authentication, charging or idempotency run. */
export interface Operation {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  url: string;
  operationId: string;
  resource: string;
  scope: Scope;
  /** Required as well as `scope`, by an operation that writes across families (an import makes tasks and projects). */
  extraScopes: readonly Scope[];
  entitlement: Entitlement;
  /** "stream": an upload the operation reads itself. */
  kind: "json" | "stream";
  /** Registered in its resource's plugin only. */
  contentTypes: string[];
  params?: z.ZodType;
  query: z.ZodType;
  body?: z.ZodType;
  status: number;
  response: z.ZodType;
  /**
   * The service it forwards to must record the key with its result in its own transaction: the
   * gateway's record is only a fast path (decisions 0008, 0011).
   */
  idempotent: boolean;
  /** A secret shown once: the gateway's record keeps the status only, and a replay is forwarded to the service, which keeps it sealed. */
  secretInResponse: boolean;
  paginated: boolean;
  cursorIn: "query" | "body";
  /** The ETag comes in the service's reply headers. */
  etag: boolean;
  /** If-Match is checked by the service, If-None-Match here (304). */
  preconditions: "if-match" | "if-none-match" | undefined;
  /** As the reference says it: "1 API call" unless stated (a batch counts its items). */
  cost: string;
  /** After giving back this replica's unspent reserved calls (decision 0007). */
  exactCharge: boolean;
  eventStream: boolean;
  summary: string;
  errors: ErrorCode[];
  otherStatuses: Record<number, string>;
  /** Filled from the answer's fields, else the path parameters, else the request body's fields. */
  location?: string;
}

/** An unknown query parameter is a 400, like an unknown body field. */
export const NoQuery = z.strictObject({});

export type ScopeFamily = { [S in Scope]: S extends `${infer F}:read` ? (`${F}:write` extends Scope ? F : never) : never }[Scope];

/**
 * `public_api` unless stated: a paid feature names its own entitlement. With a scope family, reads
 * (GET) require `<family>:read` and other methods `<family>:write`.
 */
export type ResourceDefaults = { name: string; entitlement?: Entitlement } & ({ scope: Scope; scopes?: never } | { scopes: ScopeFamily; scope?: never });

type Stated = "method" | "url" | "operationId" | "summary" | "response";

/** Everything but `Stated` is stated only where it differs from the resource's defaults or operationOf's. */
export type OperationSpec = Pick<Operation, Stated> & Partial<Omit<Operation, Stated | "resource">>;

export interface InputOf<S extends OperationSpec> {
  params: S extends { params: infer P extends z.ZodType } ? z.output<P> : undefined;
  query: S extends { query: infer Q extends z.ZodType } ? z.output<Q> : z.output<typeof NoQuery>;
  body: S extends { kind: "stream" } ? Readable : S extends { body: infer B extends z.ZodType } ? z.output<B> : undefined;
}

export interface Admitted {
  ctx: RpcContext;
  identity: Identity;
  /** Null for an Idempotency-Key replay (never charged). */
  charge: Charge | null;
  /** Never the request's Host. */
  origin: string;
  charger: Pick<Charger, "chargeItems">;
  ifNoneMatch?: string[] | undefined;
}

export type OperationInput<S extends OperationSpec> = InputOf<S> & Admitted & { clients: Clients };

export class WithStatus {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
}

export interface StreamRequest {
  query: StreamEventsQuery;
  identity: Identity;
  ctx: RpcContext;
}

export class EventStreamAnswer {
  constructor(readonly request: StreamRequest) {}
}

export interface RawInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

export type UnwrapCursor = (query: Record<string, unknown>, after: string) => (params: unknown) => string;

/** The parsed values stay inside the closure with their types; the pipeline sees only what it needs to sign cursors. */
export interface Prepared {
  query: unknown;
  params: unknown;
  run(admitted: Admitted, clients: Clients): Promise<unknown>;
}

export interface ServedOperation extends Operation {
  prepare(raw: RawInput, unwrapCursor: UnwrapCursor): Prepared;
}

export interface Resource {
  name: string;
  operations: readonly ServedOperation[];
}

/** A misspelt or retired option is a compile error, never ignored. */
type OnlySpecFields<S> = { [K in Exclude<keyof S, keyof OperationSpec>]: never };

export interface ResourceBuilder {
  op<const S extends OperationSpec>(spec: S & OnlySpecFields<S>, forward: (input: OperationInput<S>) => Promise<unknown>): void;
}
