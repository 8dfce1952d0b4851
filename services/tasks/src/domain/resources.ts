import { type Database, DEFAULT_PAGE_BYTES, type ScanGate, scanGate } from "@tasksvc/db";
import { createLogger, type Logger } from "@tasksvc/logger";
import { type Repositories, repositories } from "../repo/repositories.js";
import { type TaskCache, taskCache } from "./task-cache.js";

/**
 * What every system of the tasks domain runs on (tasks, projects, dependencies, events,
 * recurrence, attachments): each is a function of this one object, plus, where it needs them, the
 * other systems it calls and settings only it reads. The service builds it once; a test builds its
 * own with the parts it wants to see (a clock, a cache, a lost broadcast).
 */
export interface TasksResources {
  /** The repositories on the pool: reads, and writes of one statement. */
  repos: Repositories;
  /** Runs `fn` in one transaction with the repositories bound to it. */
  tx<T>(fn: (r: Repositories) => Promise<T>): Promise<T>;
  /** Called after a transaction that wrote outbox rows commits (wakes the relay). */
  written(): void;
  /** Each organization's share of the connections for lists, searches and the feed. */
  scans: ScanGate;
  /** The bytes of items one reply may carry (a page, a batch's results): under NATS's max_payload. */
  replyBytes: number;
  /** Current tasks kept in memory; dropped on every replica by changed(). */
  cache: TaskCache;
  /**
   * Whether a cache hit must be checked against its row's current version before it is served
   * (decision 0017): when changed() may reach another replica after a later request does, or
   * never (a NATS cluster). Asked on every hit.
   */
  checkHits(): boolean;
  /** Tells every replica that these tasks changed; resolves once NATS has the message. */
  changed(organizationId: string, numbers: readonly number[]): Promise<void>;
  /**
   * The time of a write, for the recurrence rules that depend on the day (a head's first slot,
   * the next occurrence made when one is done).
   */
  now(): Date;
  log: Logger;
}

/** The parts a caller may set; each absent one is what a lone process with no relay and no peers has. */
export interface TasksResourceOptions {
  written?: () => void;
  /** The bytes of items a page may carry: the service's NATS connection's pageBudget(). */
  pageBytes?: number;
  cache?: TaskCache;
  checkHits?: () => boolean;
  changed?: TasksResources["changed"];
  now?: () => Date;
  log?: Logger;
}

/** The resources over a database. */
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
    now: o.now ?? (() => new Date()),
    log: o.log ?? createLogger({ service: "tasks", level: "silent" }),
  };
}
