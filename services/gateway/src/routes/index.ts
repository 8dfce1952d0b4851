import type { Operation, Resource } from "../pipeline/operation.js";
import { apiKeys } from "./api-keys.js";
import { auditEvents } from "./audit-events.js";
import { attachments } from "./attachments.js";
import { comments } from "./comments.js";
import { dailyPlan } from "./daily-plan.js";
import { customFields } from "./custom-fields.js";
import { dependencies } from "./dependencies.js";
import { events } from "./events.js";
import { exports } from "./exports.js";
import { followers } from "./followers.js";
import { imports } from "./imports.js";
import { invitations } from "./invitations.js";
import { labels } from "./labels.js";
import { members } from "./members.js";
import { notifications } from "./notifications.js";
import { oauthClients } from "./oauth-clients.js";
import { organizations } from "./organizations.js";
import { projects } from "./projects.js";
import { rewinds } from "./rewinds.js";
import { taskBatches } from "./task-batches.js";
import { tasks } from "./tasks.js";
import { trash } from "./trash.js";
import { usage } from "./usage.js";
import { webhookEndpoints } from "./webhook-endpoints.js";

/** In the order of the reference documentation. */
export const resources: readonly Resource[] = [
  organizations,
  members,
  invitations,
  apiKeys,
  oauthClients,
  auditEvents,
  usage,
  tasks,
  trash,
  rewinds,
  taskBatches,
  dependencies,
  followers,
  notifications,
  comments,
  attachments,
  exports,
  projects,
  labels,
  customFields,
  imports,
  dailyPlan,
  webhookEndpoints,
  events,
];

export const operations: readonly Operation[] = resources.flatMap((r) => r.operations);
