import type { RpcContext, TaskSummary } from "@tasksvc/contracts";
import type { Database } from "@tasksvc/db";
import { type BoardsRepo, boardsRepo } from "../repo/boards-repo.js";

/** What the boards service asks the tasks service (over NATS, with the caller's context). */
export interface TasksPort {
  lookup(ctx: RpcContext, numbers: number[]): Promise<TaskSummary[]>;
  withSubtasks(ctx: RpcContext, number: number): Promise<{ task: TaskSummary | null; subtasks: TaskSummary[] }>;
}

/** What every system of the boards domain runs on: each is a function of this one object. */
export interface BoardsResources {
  /** The repository on the pool. */
  repo: BoardsRepo;
  /** Runs `fn` in one transaction with a repository bound to it. */
  tx<T>(fn: (repo: BoardsRepo) => Promise<T>): Promise<T>;
  tasks: TasksPort;
}

/** The resources over a database. */
export function boardsResources(db: Database, tasks: TasksPort): BoardsResources {
  return { repo: boardsRepo(db.sql), tx: (fn) => db.tx((t) => fn(boardsRepo(t))), tasks };
}
