import { describe, expect, it } from "vitest";
import { eventBody, OrgEventAsSent, webhookBody } from "../src/event-body.js";
import { TASK_FIELDS } from "../src/tasks.js";
import type { Recurrence } from "../src/recurrence.js";
import type { Task } from "../src/tasks.js";
import type { WebhookEndpoint } from "../src/webhooks.js";

// The one builder of an event's body: the feed's item, the stream's message, the webhook body.

/** An object's keys as jsonb stores them (shorter first, then bytewise): how envelopes come back from Postgres. */
function jsonbOrder<T extends object>(o: T): T {
  const keys = Object.keys(o).sort((a, b) => a.length - b.length || (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(keys.map((k) => [k, (o as Record<string, unknown>)[k]])) as T;
}

const task: Task = {
  id: "T-7",
  version: 2,
  title: 'Ünïcode ✓ "quoted"',
  description: null,
  status: "IN_PROGRESS",
  priority: "HIGH",
  start_date: null,
  due_date: null,
  notes: null,
  story_points: null,
  project_ids: [],
  owner_id: "usr_7",
  assignee_ids: ["usr_8", "usr_7"],
  label_ids: ["lbl_2", "lbl_1"],
  custom_fields: { n: 1, key: ["opt_1"], longer: "x" },
  recurrence: null,
  parent_task_id: null,
  archived: false,
  series_task_id: null,
  occurrence_date: null,
  created_at: "2025-01-02T03:04:05.678Z",
  updated_at: "2025-01-02T03:04:06.000Z",
};
const changes = { title: { from: "old", to: task.title }, status: { from: "TODO", to: "IN_PROGRESS" } };
const stored = {
  id: "evt_1",
  type: "task.updated",
  organization_id: "org_1",
  created_at: "2025-01-02T03:04:06.000Z",
  data: jsonbOrder(task),
  changes: jsonbOrder(changes),
};

describe("eventBody and webhookBody", () => {
  it("when an envelope comes back from jsonb, then the item has id, type, timestamp, data and changes, each in the API's order", () => {
    const item = eventBody(stored);
    expect(Object.keys(item)).toEqual(["id", "type", "timestamp", "data", "changes"]);
    expect(item).toMatchObject({ id: "evt_1", type: "task.updated", timestamp: stored.created_at });
    expect(Object.keys(item.data)).toEqual(TASK_FIELDS);
    expect(JSON.stringify(item.data)).toBe(JSON.stringify(task));
    expect("changes" in item && Object.keys(item.changes ?? {})).toEqual(["title", "status"]);
  });

  it("when an undo's envelope names its rewind, then the feed item and the webhook body carry rewind_id after changes; other events have none", () => {
    const undone = { ...stored, rewind_id: "rwd_1" };
    const item = eventBody(undone);
    expect(Object.keys(item)).toEqual(["id", "type", "timestamp", "data", "changes", "rewind_id"]);
    expect(JSON.parse(webhookBody(undone))).toMatchObject({ rewind_id: "rwd_1" });
    expect(webhookBody(undone)).toBe(JSON.stringify(item).replace('{"id":"evt_1",', "{"));
    expect("rewind_id" in eventBody(stored)).toBe(false);
  });

  it("when the webhook body is built, then it is the feed item's text without its id, byte for byte, and the same every time", () => {
    const body = webhookBody(stored);
    expect(`{"id":"evt_1",${body.slice(1)}`).toBe(JSON.stringify(eventBody(stored)));
    expect(webhookBody({ ...stored, data: task, changes })).toBe(body);
  });

  it("when an event is serialized, then it is the envelope with type, ISO timestamp and data in that order", () => {
    const data = { id: "tsk_1", title: 'Ünïcode ✓ "quoted"', tags: ["a", "b"] };
    const body = webhookBody({ id: "evt_01", type: "task.updated", created_at: "2025-01-02T03:04:05.678Z", data });
    expect(body).toBe(`{"type":"task.updated","timestamp":"2025-01-02T03:04:05.678Z","data":${JSON.stringify(data)}}`);
  });

  it('when the event is a probe, then the body ends with "test":true; otherwise the field is absent', () => {
    const probe = { id: "evt_2", type: "webhook.verify", created_at: "2025-01-02T03:04:05.678Z", data: { endpoint_id: "whe_1" } };
    expect(webhookBody(probe, { test: true })).toBe(
      `{"type":"webhook.verify","timestamp":"2025-01-02T03:04:05.678Z","data":{"endpoint_id":"whe_1"},"test":true}`,
    );
    expect(webhookBody(probe)).not.toContain('"test"');
    expect(webhookBody(stored)).not.toContain('"test"');
  });

  it("when an event has no changes (a create, an endpoint's event, a stored null), then the body has no changes field", () => {
    expect(Object.keys(eventBody({ ...stored, type: "task.created", changes: undefined }))).toEqual(["id", "type", "timestamp", "data"]);
    expect(Object.keys(eventBody({ ...stored, changes: null }))).toEqual(["id", "type", "timestamp", "data"]);
    const endpoint: WebhookEndpoint = {
      id: "whe_1",
      url: "https://hooks.example.com/x",
      enabled: false,
      event_types: [],
      verified: false,
      disabled_reason: null,
      failure_count: 0,
      last_success_at: null,
      last_failure_at: null,
      rate_limit: null,
      created_at: "2025-01-01T00:00:00.000Z",
      updated_at: "2025-01-02T00:00:00.000Z",
    };
    const item = eventBody({ id: "evt_3", type: "webhook_endpoint.disabled", created_at: endpoint.updated_at, data: jsonbOrder(endpoint) });
    expect(JSON.stringify(item)).toBe(
      `{"id":"evt_3","type":"webhook_endpoint.disabled","timestamp":"${endpoint.updated_at}","data":${JSON.stringify(endpoint)}}`,
    );
  });
});

describe("OrgEventAsSent", () => {
  it("when a message is an event, then it is handed on as sent: its key order, nested ones too, and a newer producer's field kept", () => {
    const recurrence: Recurrence = {
      frequency: "WEEKLY",
      interval: 2,
      by_weekday: [1, 3],
      by_month_day: null,
      basis: "SCHEDULE",
      timezone: "Europe/Berlin",
      start_date: null,
      end_date: null,
      max_occurrences: null,
      rollover_enabled: false,
      active: true,
      rrule: "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,WE",
    };
    const sent = { ...stored, data: { ...jsonbOrder(task), recurrence: jsonbOrder(recurrence), later_field: 1 } };
    const parsed = OrgEventAsSent.safeParse(JSON.parse(JSON.stringify(sent)));
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    expect(JSON.stringify(parsed.data)).toBe(JSON.stringify(sent));
  });

  it("when a message is no event, then it is refused with the schema's issues", () => {
    const parsed = OrgEventAsSent.safeParse({ ...stored, created_at: 5 });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues.length).toBeGreaterThan(0);
  });
});
