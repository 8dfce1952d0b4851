import { actorOf } from "@tasksvc/contracts";
import type { Caller, CreateTaskBody, RollOverInput, RpcContext } from "@tasksvc/contracts";
import { createDb, migrate, newId } from "@tasksvc/db";
import { createLogger } from "@tasksvc/logger";
import { afterAll, beforeAll, inject } from "vitest";
import { type TasksResources, tasksResources } from "../src/domain/resources.js";
import { type RolloverPort, recurrenceSystem } from "../src/domain/recurrence/system.js";
import { tasksSystem } from "../src/domain/tasks.js";
import type { RecurrenceRepo } from "../src/repo/recurrence-repo.js";
import { MIGRATIONS_DIR } from "../src/service.js";

/**
 * The recurrence scheduler against real Postgres, on a schema of its own per test file (the
 * stack's tasks service runs its own scheduler on `tasks` with the real clock, and files run in
 * parallel). Time is an argument of tick(): every case says which instant it is, and nothing sleeps.
 */
export function schedulerFixture(schema: string) {
  const stack = inject("stack");
  const log = createLogger({ service: "scheduler-test", level: "silent" });
  const db = createDb({ url: stack.databaseUrl, schema, max: 6 });
  const resources = tasksResources(db, { log });
  const { repos } = resources;
  const svc = tasksSystem(resources);
  /** The tasks system with its clock pinned at `iso`: writes that complete an occurrence happen then. */
  const svcAt = (iso: string) => tasksSystem({ ...resources, now: () => new Date(iso) });
  /**
   * What the scheduler requests of the boards service (on the rollover stream), kept for the test to read. The boards service's
   * side (once per task and day, an entry the user removed stays removed) runs in the e2e test.
   */
  function boardsAsked() {
    const asked: RollOverInput[] = [];
    const port: RolloverPort = {
      request: async (i) => {
        asked.push(i);
      },
    };
    return { asked, port, of: (c: Caller) => asked.filter((i) => i.organization_id === c.organizationId) };
  }
  const scheduler = (boards: RolloverPort = boardsAsked().port) => recurrenceSystem(resources, { boards });
  /** The resources with some methods of the pool's recurrence repository replaced (a replica's stale read, a race). */
  const withRecurrence = (patch: Partial<RecurrenceRepo>): TasksResources => ({
    ...resources,
    repos: { ...repos, recurrence: { ...repos.recurrence, ...patch } },
  });

  beforeAll(async () => {
    await migrate({ url: stack.databaseUrl, schema, dir: MIGRATIONS_DIR, log });
  });
  afterAll(async () => {
    await db.sql.unsafe(`drop schema ${schema} cascade`);
    await db.end({ timeout: 1 });
  });

  function caller(): Caller {
    const org = newId("org");
    const ctx: RpcContext = { request_id: "req_sched", organization_id: org, user_id: "usr_sched", credential_id: "key_sched", scopes: [], plan: "pro" };
    return { organizationId: org, userId: "usr_sched", credentialId: "key_sched", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
  }

  /** The organization's tasks other than the head, oldest first, as the API shows them. */
  async function occurrences(c: Caller, head: string) {
    const page = (await repos.search.page(c.organizationId, { filter: undefined, sort: "-updated_at", limit: 100 })).parse();
    return page.data.filter((t) => t.id !== head).sort((a, b) => Number(a.id.slice(2)) - Number(b.id.slice(2)));
  }
  const at = (iso: string) => new Date(iso);
  /** The due days of a series' occurrences. tick() serves every series in the schema, so tests look at their own. */
  const days = async (c: Caller, head: string) => (await occurrences(c, head)).map((t) => t.due_date?.slice(0, 10));

  async function series(c: Caller, body: Partial<CreateTaskBody> & { recurrence: NonNullable<CreateTaskBody["recurrence"]> }) {
    return svc.createTask(c, { title: "water the plants", priority: "HIGH", story_points: 2, notes: "the big ones too", ...body });
  }

  return { db, log, resources, repos, svc, svcAt, boardsAsked, scheduler, withRecurrence, caller, occurrences, at, days, series };
}
