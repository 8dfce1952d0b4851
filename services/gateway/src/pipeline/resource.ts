import { Readable } from "node:stream";
import type { Scope } from "@tasksvc/contracts";
import { AppError, validationError } from "@tasksvc/errors";
import type { z } from "zod";
import { checkIdempotencyDeclared } from "./idempotency.js";
import {
  type InputOf,
  NoQuery,
  type Operation,
  type OperationSpec,
  type RawInput,
  type Resource,
  type ResourceBuilder,
  type ResourceDefaults,
  type ServedOperation,
  type UnwrapCursor,
} from "./operation.js";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function parse(schema: z.ZodType, value: unknown, what: string): unknown {
  const r = schema.safeParse(value);
  if (!r.success) throw validationError(r.error, "", what);
  return r.data;
}

/** Query, then its cursor, then path (and the cursor's binding to it), then body: the order the pipeline promises. */
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

function scopeOf(defaults: ResourceDefaults, method: Operation["method"]): Scope {
  if (defaults.scopes === undefined) return defaults.scope;
  return method === "GET" ? `${defaults.scopes}:read` : `${defaults.scopes}:write`;
}

/** The house's defaults, then its resource's, then what it states. */
function operationOf(spec: OperationSpec, defaults: ResourceDefaults): Operation {
  checkIdempotencyDeclared(spec);
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
    extraScopes: [],
    entitlement: defaults.entitlement ?? "public_api",
    ...spec,
  };
}

/** `prepare` parses the input in the operation's own generic scope and keeps the typed values in a closure, so nothing is cast. */
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
  return { name: defaults.name, operations: served };
}
