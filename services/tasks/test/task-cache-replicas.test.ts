import { actorOf } from "@tasksvc/contracts";
import type { Caller, RpcContext } from "@tasksvc/contracts";
import { createDb, newId } from "@tasksvc/db";
import { afterAll, describe, expect, inject, it } from "vitest";
import { projectsSystem } from "../src/domain/projects.js";
import { tasksResources } from "../src/domain/resources.js";
import { tasksSystem } from "../src/domain/tasks.js";
import type { TasksRepo } from "../src/repo/tasks-repo.js";

// Two replicas of the tasks domain over the stack's `tasks` schema, each with its own read cache,
// and a broadcast that never reaches the other replica: what a NATS cluster can do to it (the
// broadcast and the next request travel different routes; a server that dies before forwarding
// it loses it while the reader's own server stays up). Decision 0017: a read must still show every
// committed write. Served unchecked, as decision 0008 reasons for one server, these cases fail
// (the third case shows it).
const stack = inject("stack");
const db = createDb({ url: stack.databaseUrl, schema: "tasks", max: 4 });

afterAll(async () => {
  await db.end({ timeout: 1 });
});

/** Counts the queries of a replica's reads: a full row, or only the row's version. */
function counted(repo: TasksRepo) {
  const calls = { rows: 0, versions: 0 };
  return {
    calls,
    repo: {
      ...repo,
      getForCache: (org: string, n: number) => {
        calls.rows++;
        return repo.getForCache(org, n);
      },
      rowVersion: (org: string, n: number) => {
        calls.versions++;
        return repo.rowVersion(org, n);
      },
    } satisfies TasksRepo,
  };
}

/** One replica; `checkHits` as on a NATS cluster (true) or on one server (false). */
function replica(checkHits = true) {
  const resources = tasksResources(db, {
    checkHits: () => checkHits,
    // The broadcast is lost on its way: no other replica hears of the write.
    changed: async () => undefined,
  });
  const { repo, calls } = counted(resources.repos.tasks);
  const res = { ...resources, repos: { ...resources.repos, tasks: repo } };
  return { svc: tasksSystem(res), projects: projectsSystem(res), calls };
}

function caller(): Caller {
  const org = newId("org");
  const ctx: RpcContext = {
    request_id: `req_cache_${Math.random()}`,
    organization_id: org,
    user_id: "usr_cache_test",
    credential_id: "key_cache_test",
    scopes: ["tasks:read", "tasks:write"],
    plan: "pro",
  };
  return { organizationId: org, userId: "usr_cache_test", credentialId: "key_cache_test", idempotencyKey: undefined, actor: actorOf(ctx), ctx };
}

describe("the read cache across replicas whose broadcasts are lost", () => {
  it("when a task is patched on one replica and the broadcast never reaches the other, then the other's next read shows the patch", async () => {
    const a = replica();
    const b = replica();
    const c = caller();
    const t = await a.svc.createTask(c, { title: "first" });
    expect((await b.svc.getTask(c, t.id)).title).toBe("first");
    expect((await b.svc.getTask(c, t.id)).title).toBe("first"); // a hit, cached on b

    await a.svc.updateTask(c, t.id, { title: "second" });
    expect((await b.svc.getTask(c, t.id)).title).toBe("second");
    await a.svc.updateTask(c, t.id, { status: "IN_PROGRESS" });
    expect(await b.svc.getTask(c, t.id)).toEqual(await a.svc.getTask(c, t.id));
  });

  it("when a task is archived, or loses a project that is deleted, on one replica, then the other's next read shows it (no new version: the row changed all the same)", async () => {
    const a = replica();
    const b = replica();
    const c = caller();
    const p = await a.projects.createProject(c, { name: "doomed" });
    const t = await a.svc.createTask(c, { title: "kept", project_id: p.id });
    expect((await b.svc.getTask(c, t.id)).project_ids).toEqual([p.id]);

    await a.svc.setArchived(c, t.id, true);
    expect((await b.svc.getTask(c, t.id)).archived).toBe(true);

    await a.projects.deleteProject(c, p.id);
    expect((await b.svc.getTask(c, t.id)).project_ids).toEqual([]);
  });

  it("when hits are served unchecked (decision 0008, one server) and the broadcast is lost, then the other replica serves the old copy: why a cluster checks", async () => {
    const a = replica(false);
    const b = replica(false);
    const c = caller();
    const t = await a.svc.createTask(c, { title: "first" });
    await b.svc.getTask(c, t.id);
    await a.svc.updateTask(c, t.id, { title: "second" });
    expect((await b.svc.getTask(c, t.id)).title).toBe("first");
    // On one server the broadcast cannot be lost while the reader stays connected; when it arrives, the copy goes.
    const one = replica(false);
    expect((await one.svc.getTask(c, t.id)).title).toBe("second");
  });

  it("when hits are served unchecked (one server), then a hit costs no query at all", async () => {
    const a = replica(false);
    const c = caller();
    const t = await a.svc.createTask(c, { title: "still" });
    await a.svc.getTask(c, t.id);
    const before = { ...a.calls };
    for (let i = 0; i < 5; i++) expect((await a.svc.getTask(c, t.id)).title).toBe("still");
    expect({ rows: a.calls.rows - before.rows, versions: a.calls.versions - before.versions }).toEqual({ rows: 0, versions: 0 });
  });

  it("when nothing changed, then a checked hit costs one version lookup and no row read", async () => {
    const a = replica();
    const c = caller();
    const t = await a.svc.createTask(c, { title: "still" });
    await a.svc.getTask(c, t.id);
    const before = { ...a.calls };
    for (let i = 0; i < 5; i++) expect((await a.svc.getTask(c, t.id)).title).toBe("still");
    expect({ rows: a.calls.rows - before.rows, versions: a.calls.versions - before.versions }).toEqual({ rows: 0, versions: 5 });
  });
});
