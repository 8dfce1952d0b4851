import { type Caller, ME, type Role, type RpcContext } from "@tasksvc/contracts";
import { fieldError } from "@tasksvc/errors";
import { notFound } from "./refs.js";

/** The keys service owns memberships; the tasks service asks it, and never the reverse. */
export interface MembersPort {
  /** Which of the ids are members of the organization now. */
  current(ctx: RpcContext, organizationId: string, userIds: readonly string[]): Promise<ReadonlySet<string>>;
}

/** Asked anew each time (never cached): a demotion must hold from the next request. */
export interface RolesPort {
  /** The user's role in the organization now; null when they are not a member. */
  roleOf(ctx: RpcContext, organizationId: string, userId: string): Promise<Role | null>;
}

/** Every id a current member, else 400 at the first one that is not (members who leave later stay on tasks). */
export async function checkAssignees(members: MembersPort, c: Caller, ids: readonly string[] | undefined, pointer = "/assignee_ids"): Promise<void> {
  if (ids === undefined || ids.length === 0) return;
  const current = await members.current(c.ctx, c.organizationId, ids);
  const at = ids.findIndex((id) => !current.has(id));
  if (at >= 0) throw fieldError(`${pointer}/${at}`, `user ${ids[at]} is not a member of this organization`);
}

/** `me` is the caller; anyone else must be a member now, else 404, as for an id of another organization. */
export async function memberInPath(members: MembersPort, c: Caller, ref: string): Promise<string> {
  const user = ref === ME ? c.userId : ref;
  if (user !== c.userId && !(await members.current(c.ctx, c.organizationId, [user])).has(user)) throw notFound("member");
  return user;
}
