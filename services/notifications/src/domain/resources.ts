import type { Database } from "@tasksvc/db";
import type { Logger } from "@tasksvc/logger";
import { type NotificationsRepo, notificationsRepo } from "../repo/notifications-repo.js";

/** The tasks service, asked as the system for the event's organization. */
export interface TasksPort {
  /** The task's current followers' user ids (every page). */
  followers(organizationId: string, taskNumber: number): Promise<string[]>;
}

export interface NotificationsResources {
  repo: NotificationsRepo;
  tasks: TasksPort;
  log: Logger;
}

export function notificationsResources(db: Database, o: { tasks: TasksPort; log: Logger; pageBytes?: number }): NotificationsResources {
  return { repo: notificationsRepo(db.sql, o.pageBytes), tasks: o.tasks, log: o.log };
}
