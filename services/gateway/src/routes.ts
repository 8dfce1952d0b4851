import {
  CreateApiKeyBody,
  KeyIdParams,
  OrganizationIdParams,
  PageQuery,
  keysRpc,
  type Entitlement,
  type RpcContext,
  type Scope,
} from "@tasksvc/contracts";
import type { RpcClient } from "@tasksvc/nats";
import { z } from "zod";

export interface Clients {
  keys: RpcClient<typeof keysRpc>;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  ctx: RpcContext;
}

/** One public operation: its HTTP shape, its policy, and where it is forwarded. */
export interface RouteDef<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  url: string;
  scope: Scope;
  entitlement: Entitlement;
  params?: P;
  query?: Q;
  body?: B;
  status: number;
  forward(c: Clients, input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>): Promise<unknown>;
}

/** Keeps each route's forward() typed by its own schemas while the table stays one array. */
function route<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(def: RouteDef<P, Q, B>): RouteDef {
  return def as unknown as RouteDef;
}

const NoQuery = z.strictObject({});

/**
 * Every public route. Every operation of the public API needs the `public_api` entitlement (all
 * plans have it today); operations of a paid feature name theirs instead.
 */
export const routes: RouteDef[] = [
  route({
    method: "GET",
    url: "/v1/organizations",
    scope: "workspaces:read",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    forward: (c, { query, ctx }) => c.keys.call("listOrganizations", query, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/organizations/:organization_id",
    scope: "workspaces:read",
    entitlement: "public_api",
    params: OrganizationIdParams,
    query: NoQuery,
    status: 200,
    forward: (c, { params, ctx }) => c.keys.call("getOrganization", params, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/members",
    scope: "members:read",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    forward: (c, { query, ctx }) => c.keys.call("listMembers", query, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/api-keys",
    scope: "api-keys:manage",
    entitlement: "public_api",
    query: NoQuery,
    body: CreateApiKeyBody,
    status: 201,
    forward: (c, { body, ctx }) => c.keys.call("createApiKey", body, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/api-keys",
    scope: "api-keys:manage",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    forward: (c, { query, ctx }) => c.keys.call("listApiKeys", query, ctx),
  }),
  route({
    method: "DELETE",
    url: "/v1/api-keys/:key_id",
    scope: "api-keys:manage",
    entitlement: "public_api",
    params: KeyIdParams,
    query: NoQuery,
    status: 200,
    forward: (c, { params, ctx }) => c.keys.call("revokeApiKey", params, ctx),
  }),
];
