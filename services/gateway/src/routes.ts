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
  tasksRpc,
  boardsRpc,
  Board,
  BoardEntry,
  DateQuery,
  DeletedEntry,
  EntryParams,
  PlanEntryBody,
  SectionStatus,
  SetSectionStatusBody,
  AddDependencyBody,
  CreateProjectBody,
  CreateTaskBody,
  DependencyParams,
  DependencyView,
  ListTasksQuery,
  Project,
  ProjectParams,
  Task,
  TaskParams,
  TaskVersion,
  UpdateProjectBody,
  UpdateTaskBody,
  type ErrorCode,
  type Entitlement,
  type RpcContext,
  type Scope,
} from "@tasksvc/contracts";
import type { RpcClient } from "@tasksvc/nats";
import type { Charge } from "./policies/limits.js";
import { z } from "zod";

export interface Clients {
  keys: RpcClient<typeof keysRpc>;
  tasks: RpcClient<typeof tasksRpc>;
  boards: RpcClient<typeof boardsRpc>;
}

/** A forward() result whose status differs from the route's usual one (e.g. 200 "already there" vs 201). */
export class WithStatus {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {}
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
  /**
   * The service records this operation's Idempotency-Key with its result in its own transaction
   * (DESIGN.md section 1), so the gateway's record is a fast path, not the guarantee: it may
   * commit asynchronously (decision 0008).
   */
  serviceIdempotency?: boolean;
  /** Error codes this operation can answer beyond the pipeline's own (OpenAPI). */
  errors?: ErrorCode[];
  /** Other success statuses forward() may answer with (WithStatus), and what they mean. */
  otherStatuses?: Record<number, string>;
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
    serviceIdempotency: true,
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
  // -- tasks (issue 4) -----------------------------------------------------------------------
  route({
    method: "POST",
    url: "/v1/tasks",
    summary: "Create a task (numbered T-<n> per organization; owned by the credential's user)",
    scope: "tasks:write",
    entitlement: "public_api",
    query: NoQuery,
    body: CreateTaskBody,
    status: 201,
    response: Task,
    idempotent: true,
    serviceIdempotency: true,
    forward: (c, { body, ctx }) => c.tasks.call("createTask", body, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/tasks",
    summary: "List tasks, most recently updated first (filters apply to the current version)",
    scope: "tasks:read",
    entitlement: "public_api",
    query: ListTasksQuery,
    status: 200,
    response: page(Task),
    paginated: true,
    errors: ["resource_not_found"],
    forward: (c, { query, ctx }) => c.tasks.call("listTasks", query, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/tasks/:task_id",
    summary: "Get a task (its current version)",
    scope: "tasks:read",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    status: 200,
    response: Task,
    forward: (c, { params, ctx }) => c.tasks.call("getTask", params, ctx),
  }),
  route({
    method: "PATCH",
    url: "/v1/tasks/:task_id",
    summary: "Update a task: a new immutable version when the content changed, none otherwise",
    scope: "tasks:write",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    body: UpdateTaskBody,
    status: 200,
    response: Task,
    idempotent: true,
    serviceIdempotency: true,
    forward: (c, { params, body, ctx }) => c.tasks.call("updateTask", { task_id: params.task_id, patch: body }, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/tasks/:task_id/archive",
    summary: "Archive a task (emits task.archived; archiving an archived task changes nothing)",
    scope: "tasks:write",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    status: 200,
    response: Task,
    idempotent: true,
    serviceIdempotency: true,
    forward: (c, { params, ctx }) => c.tasks.call("archiveTask", params, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/tasks/:task_id/unarchive",
    summary: "Unarchive a task (emits task.updated)",
    scope: "tasks:write",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    status: 200,
    response: Task,
    idempotent: true,
    serviceIdempotency: true,
    forward: (c, { params, ctx }) => c.tasks.call("unarchiveTask", params, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/tasks/:task_id/history",
    summary: "A task's versions, newest first",
    scope: "tasks:read",
    entitlement: "public_api",
    params: TaskParams,
    query: PageQuery.strict(),
    status: 200,
    response: page(TaskVersion),
    paginated: true,
    forward: (c, { params, query, ctx }) => c.tasks.call("taskHistory", { ...query, task_id: params.task_id }, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/tasks/:task_id/dependencies",
    summary: "A task's dependency view: what blocks it and what it blocks",
    scope: "tasks:read",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    status: 200,
    response: DependencyView,
    forward: (c, { params, ctx }) => c.tasks.call("getDependencies", params, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/tasks/:task_id/dependencies",
    summary: "Record that the task is blocked by blocker_task_id (201 new link, 200 existing link)",
    scope: "tasks:write",
    entitlement: "public_api",
    params: TaskParams,
    query: NoQuery,
    body: AddDependencyBody,
    status: 201,
    otherStatuses: { 200: "The link already existed: nothing changed, no event" },
    response: DependencyView,
    idempotent: true,
    serviceIdempotency: true,
    errors: ["dependency_cycle"],
    forward: async (c, { params, body, ctx }) => {
      const r = await c.tasks.call("addDependency", { task_id: params.task_id, blocker_task_id: body.blocker_task_id }, ctx);
      return new WithStatus(r.created ? 201 : 200, r.view);
    },
  }),
  route({
    method: "DELETE",
    url: "/v1/tasks/:task_id/dependencies/:blocker_task_id",
    summary: "Remove a dependency link; answers the task's dependency view",
    scope: "tasks:write",
    entitlement: "public_api",
    params: DependencyParams,
    query: NoQuery,
    status: 200,
    response: DependencyView,
    forward: (c, { params, ctx }) => c.tasks.call("removeDependency", params, ctx),
  }),
  // -- projects ------------------------------------------------------------------------------
  route({
    method: "POST",
    url: "/v1/projects",
    summary: "Create a project (name unique in the organization)",
    scope: "projects:write",
    entitlement: "public_api",
    query: NoQuery,
    body: CreateProjectBody,
    status: 201,
    response: Project,
    idempotent: true,
    serviceIdempotency: true,
    forward: (c, { body, ctx }) => c.tasks.call("createProject", body, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/projects",
    summary: "List projects, newest first",
    scope: "projects:read",
    entitlement: "public_api",
    query: PageQuery.strict(),
    status: 200,
    response: page(Project),
    paginated: true,
    forward: (c, { query, ctx }) => c.tasks.call("listProjects", query, ctx),
  }),
  route({
    method: "GET",
    url: "/v1/projects/:project_id",
    summary: "Get a project",
    scope: "projects:read",
    entitlement: "public_api",
    params: ProjectParams,
    query: NoQuery,
    status: 200,
    response: Project,
    forward: (c, { params, ctx }) => c.tasks.call("getProject", params, ctx),
  }),
  route({
    method: "PATCH",
    url: "/v1/projects/:project_id",
    summary: "Update a project's name or description",
    scope: "projects:write",
    entitlement: "public_api",
    params: ProjectParams,
    query: NoQuery,
    body: UpdateProjectBody,
    status: 200,
    response: Project,
    forward: (c, { params, body, ctx }) => c.tasks.call("updateProject", { project_id: params.project_id, patch: body }, ctx),
  }),
  route({
    method: "DELETE",
    url: "/v1/projects/:project_id",
    summary: "Delete a project; tasks keep their other projects (emits task.updated for each task it leaves)",
    scope: "projects:write",
    entitlement: "public_api",
    params: ProjectParams,
    query: NoQuery,
    status: 200,
    response: z.object({ id: z.string(), deleted: z.literal(true) }),
    forward: (c, { params, ctx }) => c.tasks.call("deleteProject", params, ctx),
  }),
  // -- daily board (issue 5) -----------------------------------------------------------------
  route({
    method: "GET",
    url: "/v1/daily-plan",
    summary: "The credential's user's board for a UTC day: TODO then PROGRESS, entries oldest first, current titles and statuses",
    scope: "tasks:read",
    entitlement: "public_api",
    query: DateQuery,
    status: 200,
    response: Board,
    forward: (c, { query, ctx }) => c.boards.call("getBoard", query, ctx),
  }),
  route({
    method: "PATCH",
    url: "/v1/daily-plan",
    summary: "Set a section's fill status for a day (creates the section when needed)",
    scope: "tasks:write",
    entitlement: "public_api",
    query: DateQuery,
    body: SetSectionStatusBody,
    status: 200,
    response: SectionStatus,
    forward: (c, { query, body, ctx }) => c.boards.call("setSectionStatus", { ...body, date: query.date }, ctx),
  }),
  route({
    method: "POST",
    url: "/v1/daily-plan/entries",
    summary: "Place one of your tasks (and its subtasks) on a section of a day; moves it from the other section",
    scope: "tasks:write",
    entitlement: "public_api",
    query: NoQuery,
    body: PlanEntryBody,
    status: 201,
    response: BoardEntry,
    idempotent: true,
    serviceIdempotency: true,
    errors: ["resource_not_found"],
    forward: (c, { body, ctx }) => c.boards.call("planEntry", body, ctx),
  }),
  route({
    method: "DELETE",
    url: "/v1/daily-plan/entries/:entry_id",
    summary: "Remove an entry from your board",
    scope: "tasks:write",
    entitlement: "public_api",
    params: EntryParams,
    query: NoQuery,
    status: 200,
    response: DeletedEntry,
    forward: (c, { params, ctx }) => c.boards.call("deleteEntry", params, ctx),
  }),
];
