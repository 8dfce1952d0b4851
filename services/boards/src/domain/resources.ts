import type { RpcContext, TaskSummary } from "@tasksvc/contracts";
import type { Database } from "@tasksvc/db";
import { type BoardsRepo, boardsRepo } from "../repo/boards-repo.js";
import { type SummaryCache, summaryCache } from "./summary-cache.js";

export interface TasksPort {
  lookup(ctx: RpcContext, numbers: number[]): Promise<TaskSummary[]>;
  /** The task and at most `limit` of its subtasks that `owner` could plan (owned, not archived). */
  withSubtasks(ctx: RpcContext, number: number, owner: string, limit: number): Promise<{ task: TaskSummary | null; subtasks: TaskSummary[] }>;
}

export interface BoardsResources {
  repo: BoardsRepo;
  tx<T>(fn: (repo: BoardsRepo) => Promise<T>): Promise<T>;
  tasks: TasksPort;
  summaries: SummaryCache;
  /** False where the tasks service's change broadcast may arrive after a later read (a NATS cluster): copies are not served then. */
  servesCopies(): boolean;
}

export function boardsResources(
  db: Database,
  tasks: TasksPort,
  copies: { servesCopies(): boolean; summaries?: SummaryCache } = { servesCopies: () => false },
): BoardsResources {
  return {
    repo: boardsRepo(db.sql),
    tx: (fn) => db.tx((t) => fn(boardsRepo(t))),
    tasks,
    summaries: copies.summaries ?? summaryCache(),
    servesCopies: copies.servesCopies,
  };
}
