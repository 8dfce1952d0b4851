import {
  ApiKey,
  CreateApiKeyBody,
  CreatedApiKey,
  Member,
  Organization,
  RevokedApiKey,
  Usage,
  page,
  type Identity,
  KeyIdParams,
  OrganizationIdParams,
  PageQuery,
  keysRpc,
  type Entitlement,
  type RpcContext,
  type Scope,
} from "@tasksvc/contracts";
import type { RpcClient } from "@tasksvc/nats";
import type { Charge } from "./policies/limits.js";
import { z } from "zod";

export interface Clients {
  keys: RpcClient<typeof keysRpc>;
}

export interface RouteInput<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  ctx: RpcContext;
  identity: Identity;
  /** This call's charge: the counters right after it was counted. */
  charge: Charge;
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
  /** The success body's schema (OpenAPI and response tests). */
  response: z.ZodType;
  /** Spec (IK): accepts an Idempotency-Key. */
  idempotent?: boolean;
  /** A cursor list: `after` is verified and unwrapped, `next_cursor` signed and bound to the query. */
  paginated?: boolean;
  /** One line for the OpenAPI document. */
  summary: string;
  /** Count this call alone, after giving back this replica's unspent reserved calls (0007). */
  exactCharge?: boolean;
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
    summary: "List the credential's organization (always one page)",
    scope: "workspaces:read",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    response: page(Organization),
    paginated: true,
    forward: (c, { query, ctx }) => c.keys.call("listOrganizations", query, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/organizations/:organization_id",
    scope: "workspaces:read",
    entitlement: "public_api",
    summary: "Get the credential's organization",
    params: OrganizationIdParams,
    query: NoQuery,
    status: 200,
    response: Organization,
    forward: (c, { params, ctx }) => c.keys.call("getOrganization", params, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/members",
    summary: "List the organization's members",
    scope: "members:read",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    response: page(Member),
    paginated: true,
    forward: (c, { query, ctx }) => c.keys.call("listMembers", query, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/api-keys",
    scope: "api-keys:manage",
    entitlement: "public_api",
    query: NoQuery,
    summary: "Mint an API key (the secret is shown once)",
    body: CreateApiKeyBody,
    status: 201,
    response: CreatedApiKey,
    idempotent: true,
    forward: (c, { body, ctx }) => c.keys.call("createApiKey", body, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/api-keys",
    summary: "List API keys (legacy rows too; never the secret)",
    scope: "api-keys:manage",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    response: page(ApiKey),
    paginated: true,
    forward: (c, { query, ctx }) => c.keys.call("listApiKeys", query, ctx),
  }),
  route({
    method: "DELETE",
    url: "/v1/api-keys/:key_id",
    scope: "api-keys:manage",
    entitlement: "public_api",
    summary: "Revoke an API key (legacy keys are soft-revoked)",
    params: KeyIdParams,
    query: NoQuery,
    status: 200,
    response: RevokedApiKey,
    forward: (c, { params, ctx }) => c.keys.call("revokeApiKey", params, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/usage",
    summary: "API-call consumption of the current billing period (this call included)",
    scope: "usage:read",
    entitlement: "public_api",
    query: NoQuery,
    status: 200,
    response: Usage,
    exactCharge: true,
    // The gateway owns the counters; nothing to forward.
    forward: async (_c, { identity, charge }) => ({
      plan: identity.plan,
      period_start: charge.quota.periodStart.toISOString(),
      period_end: charge.quota.periodEnd.toISOString(),
      calls_used: charge.quota.used,
      calls_allowance: charge.quota.limit,
      burst: {
        limit: charge.burst.limit,
        window_seconds: charge.burst.windowSeconds,
        remaining: charge.burst.remaining,
        reset_at: charge.burst.resetAt.toISOString(),
      },
    }),
  }),
];
