import {
  ApiKey,
  Attachment,
  Board,
  BoardEntry,
  BoardSection,
  CreatedApiKey,
  CreatedWebhookEndpoint,
  DeliveryAttempt,
  DependencyItem,
  DependencyView,
  DownloadLink,
  EndpointFeedEvent,
  Event,
  Member,
  Organization,
  ProbeResult,
  Project,
  Recurrence,
  RotatedWebhookEndpoint,
  Task,
  TaskFeedEvent,
  TaskVersion,
  UploadTicket,
  Usage,
  WebhookDelivery,
  WebhookEndpoint,
  WebhookEndpointStats,
} from "@tasksvc/contracts";
import type { z } from "zod";

// The OpenAPI document's named components and tags.

/**
 * The resources a client works with, as named components (`#/components/schemas/Task`): every
 * response that holds one refers to it, so generated clients get one `Task` type, not one per
 * operation. Request bodies and the other responses are named after their operation
 * (`CreateTaskRequest`, `ListTasksResponse`).
 */
export const RESOURCES: ReadonlyArray<[z.ZodType, string]> = [
  [Organization, "Organization"],
  [Member, "Member"],
  [ApiKey, "ApiKey"],
  [CreatedApiKey, "CreatedApiKey"],
  [Usage, "Usage"],
  [Task, "Task"],
  [TaskVersion, "TaskVersion"],
  [Recurrence, "Recurrence"],
  [DependencyItem, "DependencyItem"],
  [DependencyView, "DependencyView"],
  [Project, "Project"],
  [Attachment, "Attachment"],
  [UploadTicket, "UploadTicket"],
  [DownloadLink, "DownloadLink"],
  [Board, "DailyPlan"],
  [BoardSection, "DailyPlanSection"],
  [BoardEntry, "DailyPlanEntry"],
  [WebhookEndpoint, "WebhookEndpoint"],
  [CreatedWebhookEndpoint, "CreatedWebhookEndpoint"],
  [RotatedWebhookEndpoint, "RotatedWebhookEndpoint"],
  [WebhookDelivery, "WebhookDelivery"],
  [Event, "Event"],
  [TaskFeedEvent, "TaskEvent"],
  [EndpointFeedEvent, "EndpointEvent"],
  [DeliveryAttempt, "WebhookDeliveryAttempt"],
  [ProbeResult, "WebhookProbeResult"],
  [WebhookEndpointStats, "WebhookEndpointStats"],
];

/** The OpenAPI tag of each resource (route file), with what it groups. */
export const TAGS: Record<string, { name: string; description: string }> = {
  organizations: { name: "Organizations", description: "The credential's organization." },
  members: { name: "Members", description: "The organization's users and their roles." },
  "api-keys": { name: "API keys", description: "Keys for servers and CI jobs: scoped, expiring, revocable; the secret is shown once." },
  usage: { name: "Usage", description: "API calls and storage used in the current billing period." },
  tasks: { name: "Tasks", description: "Tasks numbered T-<n> per organization, each change an immutable version." },
  dependencies: { name: "Dependencies", description: "What blocks a task; the graph is always acyclic." },
  attachments: { name: "Attachments", description: "Files on tasks: start an upload, send the bytes, register, download." },
  projects: { name: "Projects", description: "Groups of tasks; a task may belong to several." },
  "daily-plan": { name: "Daily plan", description: "Each user's board for a day: a TODO and a PROGRESS section." },
  events: {
    name: "Events",
    description:
      "Task events and webhook endpoints' operational events of the last 30 days, exactly as webhooks deliver them, as pages or live: catch up on missed deliveries or rebuild state.",
  },
  "webhook-endpoints": {
    name: "Webhook endpoints",
    description: "Signed outbound events (Standard Webhooks): endpoints, secrets, health and stats, rate limits, the delivery log, replays.",
  },
};
