import type { RemovalJob } from "@tasksvc/contracts";
import { type Database, DEFAULT_PAGE_BYTES, type ScanGate, scanGate } from "@tasksvc/db";
import { createLogger, type Logger } from "@tasksvc/logger";
import { type Repositories, repositories } from "../repo/repositories.js";
import type { MembersPort, RolesPort } from "./people.js";
import { type TaskCache, taskCache } from "./task-cache.js";

/** A test builds its own with the parts it wants to see (a clock, a cache, a lost broadcast). */
export interface TasksResources {
  repos: Repositories;
  tx<T>(fn: (r: Repositories) => Promise<T>): Promise<T>;
  /** Wakes the relay. */
  written(): void;
  /** Each organization's share of the connections for scans (decision 0031). */
  scans: ScanGate;
  /** Under NATS's max_payload. */
  replyBytes: number;
  cache: TaskCache;
  /** A hit is checked against its row's version when changed() may reach another replica after a later request (a NATS cluster, decision 0017). */
  checkHits(): boolean;
  /** Resolves once NATS has the message. */
  changed(organizationId: string, numbers: readonly number[]): Promise<void>;
  /** Every replica forgets its copies of the organization's tasks; resolves once NATS has the message. */
  changedAll(organizationId: string): Promise<void>;
  /** Queues the work that removes a deleted label (or field, or option) from every task carrying it. */
  startRemoval(job: RemovalJob): Promise<void>;
  now(): Date;
  log: Logger;
  members: MembersPort;
  roles: RolesPort;
}

export interface TasksResourceOptions {
  written?: () => void;
  pageBytes?: number;
  cache?: TaskCache;
  checkHits?: () => boolean;
  changed?: TasksResources["changed"];
  changedAll?: TasksResources["changedAll"];
  startRemoval?: TasksResources["startRemoval"];
  now?: () => Date;
  log?: Logger;
  members?: MembersPort;
  roles?: RolesPort;
}

const noMembersPort: MembersPort = {
  current: () => Promise.reject(new Error("these tasks resources were built without a members port (the keys service)")),
};
const noRolesPort: RolesPort = {
  roleOf: () => Promise.reject(new Error("these tasks resources were built without a roles port (the keys service)")),
};

export function tasksResources(db: Database, o: TasksResourceOptions = {}): TasksResources {
  return {
    repos: repositories(db.sql, o.pageBytes),
    tx: (fn) => db.tx((t) => fn(repositories(t, o.pageBytes))),
    written: o.written ?? (() => undefined),
    scans: scanGate({ service: "tasks", connections: db.connections }),
    replyBytes: o.pageBytes ?? DEFAULT_PAGE_BYTES,
    cache: o.cache ?? taskCache(),
    checkHits: o.checkHits ?? (() => false),
    changed: o.changed ?? (async () => undefined),
    changedAll: o.changedAll ?? (async () => undefined),
    startRemoval: o.startRemoval ?? (() => Promise.reject(new Error("these tasks resources were built without a job queue"))),
    now: o.now ?? (() => new Date()),
    log: o.log ?? createLogger({ service: "tasks", level: "silent" }),
    members: o.members ?? noMembersPort,
    roles: o.roles ?? noRolesPort,
  };
}
