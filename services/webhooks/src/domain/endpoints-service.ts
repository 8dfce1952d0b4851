import {
  type AuditAction,
  WEBHOOK_URL_MAX,
  type CallResult,
  type Caller,
  type DestinationChecked,
  type CreatedWebhookEndpoint,
  type CreateWebhookEndpointBody,
  type ProbeResult,
  type RotatedWebhookEndpoint,
  type RpcContext,
  type SignedRequest,
  type Task,
  type TaskEventType,
  type EndpointEventType,
  type EventType,
  type Comment,
  type CommentEventType,
  type DeletedCommentData,
  isCommentEventType,
  isPurgeEventType,
  isTaskEventType,
  type UpdateWebhookEndpointBody,
  type VerifyResult,
  type WebhookEndpoint,
  webhookBody,
} from "@tasksvc/contracts";
import { changesOf, idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { checkUrl, EgressRefused, newSigningSecret } from "@tasksvc/outbound";
import { DuplicateEndpointUrl, type EndpointsRepo, endpointsRepo } from "../repo/endpoints-repo.js";
import type { WebhooksResources } from "./resources.js";

export interface EndpointsOptions {
  allowHttp: boolean;
  /** The delivery service is the only process that makes outbound HTTP calls: the egress guard is in one place. */
  call: (request: SignedRequest, ctx: RpcContext) => Promise<CallResult>;
  checkDestination: (url: string, ctx: RpcContext) => Promise<DestinationChecked>;
}

/** The secret sealed, so the idempotency table never holds a plain secret (decision 0013). */
interface CreateRecord {
  endpoint: WebhookEndpoint;
  secret_sealed: string;
}

interface RotateRecord {
  endpoint: WebhookEndpoint;
  secret_sealed: string;
  previous_secret_expires_at: string;
}

/** Not a task event type, so a receiver cannot mistake a probe for one. */
export const VERIFY_EVENT_TYPE = "webhook.verify";

/** Well-formed (a receiver's parser accepts it) but no task's: numbers start at 1 (decision 0033). */
export const SAMPLE_TASK_ID = "T-0";
/** Like the task id, well-formed and nobody's. */
export const SAMPLE_USER_ID = "usr_0";

/** Due a week on, but as a real task.due_soon or task.overdue would be: within the day, or just past. */
const SAMPLE_DUE_IN: Record<TaskEventType, number> = {
  "task.created": 7 * 24 * 3600_000,
  "task.updated": 7 * 24 * 3600_000,
  "task.archived": 7 * 24 * 3600_000,
  "task.due_soon": 12 * 3600_000,
  "task.overdue": -3600_000,
  "task.deleted": 7 * 24 * 3600_000,
  "task.restored": 7 * 24 * 3600_000,
};

/** A representative task, so a receiver exercises a real event's code path; archived only for task.archived. */
export function sampleTask(type: TaskEventType, at: Date): Task {
  const now = at.toISOString();
  return {
    id: SAMPLE_TASK_ID,
    version: 1,
    title: "Sample task (webhook test event)",
    description: "A sample task sent by the test-event operation; it does not exist.",
    status: type === "task.created" ? "TODO" : "IN_PROGRESS",
    priority: "MEDIUM",
    start_date: now,
    due_date: new Date(at.getTime() + SAMPLE_DUE_IN[type]).toISOString(),
    notes: null,
    story_points: 3,
    project_ids: [],
    owner_id: SAMPLE_USER_ID,
    assignee_ids: [],
    label_ids: [],
    custom_fields: {},
    recurrence: null,
    parent_task_id: null,
    archived: type === "task.archived",
    series_task_id: null,
    occurrence_date: null,
    created_at: now,
    updated_at: now,
  };
}

/** A comment on the sample task, by the sample user; comment.deleted carries only where it was, as a real one does. */
export function sampleComment(type: CommentEventType, at: Date): Comment | DeletedCommentData {
  const now = at.toISOString();
  const id = "cmt_0";
  if (type === "comment.deleted") return { id, task_id: SAMPLE_TASK_ID };
  return {
    id,
    task_id: SAMPLE_TASK_ID,
    author_id: SAMPLE_USER_ID,
    body: "A sample comment sent by the test-event operation; it does not exist.",
    mention_ids: [],
    created_at: now,
    updated_at: now,
    edited_at: type === "comment.updated" ? now : null,
  };
}

export function sampleEndpoint(type: EndpointEventType, e: WebhookEndpoint): WebhookEndpoint {
  return type === "webhook_endpoint.disabled"
    ? { ...e, enabled: false, disabled_reason: "consecutive_failures" }
    : { ...e, enabled: true, disabled_reason: null, failure_count: 0 };
}

function probeResult(r: CallResult): ProbeResult {
  return r.status === null ? { outcome: r.outcome, duration_ms: r.duration_ms } : { outcome: r.outcome, status: r.status, duration_ms: r.duration_ms };
}

const notFound = () => new AppError("resource_not_found", "No webhook endpoint with that id exists in this organization.");

/** 400 like the storage allowance's (the catalog has no code for a plan limit), naming the whole body: no field would make it succeed. */
function atCap(count: number, cap: number): AppError {
  const message = `the organization has ${count} webhook endpoints and its plan allows ${cap}: delete one before creating another, or ask for a higher limit`;
  return new AppError("validation_failed", `The organization has reached its plan's limit of webhook endpoints (${cap}).`, {
    errors: [{ pointer: "/", message }],
  });
}

/** What the audit log shows of an endpoint: never its secrets. */
const AUDITED_FIELDS = ["url", "event_types", "enabled", "rate_limit"] as const;
const auditedFields = (e: WebhookEndpoint) => ({ url: e.url, event_types: e.event_types, enabled: e.enabled, rate_limit: e.rate_limit });

const audited = (c: Caller, id: string, action: AuditAction) => ({
  organizationId: c.organizationId,
  action,
  actor: c.actor,
  ctx: c.ctx,
  target: { type: "webhook_endpoint", id } as const,
});

export function endpointsService(res: WebhooksResources, o: EndpointsOptions) {
  const { box } = res;
  const repo = endpointsRepo(res.db.sql);
  const tx = <T>(fn: (r: EndpointsRepo) => Promise<T>) => res.db.tx((t) => fn(endpointsRepo(t)));

  /** The URL as stored is its WHATWG serialization, so one destination cannot be stored twice under two spellings (decision 0023). */
  function destination(url: string): string {
    let href: string;
    try {
      href = checkUrl(url, { allowHttp: o.allowHttp }).href;
    } catch (e) {
      if (e instanceof EgressRefused) throw fieldError("/url", e.message);
      throw e;
    }
    if (href.length > WEBHOOK_URL_MAX) throw fieldError("/url", `is longer than ${WEBHOOK_URL_MAX} characters once normalized`);
    return href;
  }

  /**
   * Refuses at once what the egress guard would refuse at every call, rather than retry for days;
   * when the delivery service cannot be asked, each call is checked as always.
   */
  async function reachable(url: string, c: Caller): Promise<void> {
    const checked = await o.checkDestination(url, c.ctx).catch(() => ({ refused: null }));
    if (checked.refused) throw fieldError("/url", checked.refused.message);
  }

  function urlTaken(pointer: "/url" | "/enabled", e: unknown): never {
    if (!(e instanceof DuplicateEndpointUrl)) throw e;
    throw fieldError(
      pointer,
      pointer === "/url"
        ? "another webhook endpoint of this organization has this URL already: update that one, or delete it first"
        : "another webhook endpoint of this organization has this endpoint's URL now: change this one's url, or delete the other first",
    );
  }

  /** A fresh webhook-id: a probe is no event, so it must never be deduplicated against one. */
  async function probe(c: Caller, id: string, event: { type: string; data: (at: Date) => unknown }): Promise<{ result: CallResult; verified: boolean }> {
    const target = await repo.signingTarget(c.organizationId, id);
    if (!target) throw notFound();
    const at = new Date();
    const eventId = newId("evt");
    // A probe is never a real event, and its body says so.
    const body = webhookBody({ id: eventId, type: event.type, created_at: at.toISOString(), data: event.data(at) }, { test: true });
    const request = res.signer.sign(target.url, target.secrets, eventId, body);
    return { result: await o.call(request, c.ctx), verified: target.verified };
  }

  return {
    /** Each endpoint multiplies what a single task write sends, hence the plan's cap, enabled or not. */
    async create(c: Caller, b: CreateWebhookEndpointBody, limits: { webhook_endpoints: number }): Promise<CreatedWebhookEndpoint> {
      const url = destination(b.url);
      const cap = limits.webhook_endpoints;
      const record = await idempotentWrite<EndpointsRepo, void, CreateRecord>({
        records: repo.idempotency,
        tx,
        credentialId: c.credentialId,
        key: c.idempotencyKey,
        operation: "createEndpoint",
        // After the replay check: a replay answers what the first call did, resolving nothing.
        prepare: () => reachable(url, c),
        async work(r: EndpointsRepo) {
          // Minted inside the work: a deadlock retry mints again, and only the committed one counts.
          const secretSealed = box.seal(newSigningSecret());
          const made = await r
            .insert(
              { id: newId("whe"), organizationId: c.organizationId, url, eventTypes: b.event_types ?? [], rateLimit: b.rate_limit ?? null, secretSealed },
              cap,
            )
            .catch((e: unknown) => urlTaken("/url", e));
          if ("atCap" in made) throw atCap(made.atCap, cap);
          await r.audit.write({
            ...audited(c, made.endpoint.id, "webhook_endpoint.created"),
            changes: changesOf<Record<string, unknown>>({}, { ...auditedFields(made.endpoint) }, AUDITED_FIELDS),
          });
          return { endpoint: made.endpoint, secret_sealed: secretSealed };
        },
      });
      res.audited();
      return { ...record.endpoint, secret: box.open(record.secret_sealed) };
    },

    list: (c: Caller, limit: number, after: string | undefined) => repo.list(c.organizationId, limit, after),

    async get(c: Caller, id: string): Promise<WebhookEndpoint> {
      const e = await repo.get(c.organizationId, id);
      if (!e) throw notFound();
      return e;
    },

    /** A change of `enabled` writes its operational event in the same transaction. */
    async update(c: Caller, id: string, patch: UpdateWebhookEndpointBody): Promise<WebhookEndpoint> {
      const url = patch.url === undefined ? undefined : destination(patch.url);
      if (url !== undefined) await reachable(url, c);
      const e = await tx(async (r) => {
        const wasEnabled = await r.lockEnabled(c.organizationId, id);
        if (wasEnabled === undefined) return undefined;
        const before = await r.get(c.organizationId, id);
        const updated = await r.update(c.organizationId, id, { ...patch, url });
        const changes = before && updated ? changesOf(auditedFields(before), auditedFields(updated), AUDITED_FIELDS) : {};
        if (Object.keys(changes).length > 0) await r.audit.write({ ...audited(c, id, "webhook_endpoint.updated"), changes });
        const changed = updated !== undefined && updated.enabled !== wasEnabled;
        if (changed) {
          await r.events.emit(updated.enabled ? "webhook_endpoint.enabled" : "webhook_endpoint.disabled", [
            { organizationId: c.organizationId, endpoint: updated },
          ]);
        }
        return updated && { updated, changed };
      }).catch((err: unknown) => urlTaken(url === undefined ? "/enabled" : "/url", err));
      if (!e) throw notFound();
      if (e.changed) res.written();
      res.audited();
      return e.updated;
    },

    /** The key's operation names the endpoint: the same key sent for another endpoint is 422, never that endpoint's secret. */
    async rotateSecret(c: Caller, id: string): Promise<RotatedWebhookEndpoint> {
      const record = await idempotentWrite<EndpointsRepo, undefined, RotateRecord>({
        records: repo.idempotency,
        tx,
        credentialId: c.credentialId,
        key: c.idempotencyKey,
        operation: `rotateSecret:${id}`,
        async work(r) {
          const secretSealed = box.seal(newSigningSecret());
          const rotated = await r.rotate(c.organizationId, id, secretSealed);
          if (!rotated) throw notFound();
          // Only that it happened: the secrets, old and new, stay out of the log.
          await r.audit.write(audited(c, id, "webhook_endpoint.secret_rotated"));
          return { endpoint: rotated.endpoint, secret_sealed: secretSealed, previous_secret_expires_at: rotated.previousSecretExpiresAt };
        },
      });
      res.audited();
      return { ...record.endpoint, secret: box.open(record.secret_sealed), previous_secret_expires_at: record.previous_secret_expires_at };
    },

    async sendTestEvent(c: Caller, id: string, eventType: EventType | undefined): Promise<ProbeResult> {
      const type = eventType ?? "task.created";
      if (isTaskEventType(type)) return probeResult((await probe(c, id, { type, data: (at) => sampleTask(type, at) })).result);
      if (isCommentEventType(type)) return probeResult((await probe(c, id, { type, data: (at) => sampleComment(type, at) })).result);
      // An erased task's event carries only its id, as a real one does.
      if (isPurgeEventType(type)) return probeResult((await probe(c, id, { type, data: () => ({ id: SAMPLE_TASK_ID }) })).result);
      const endpoint = await repo.get(c.organizationId, id);
      if (!endpoint) throw notFound();
      const { result } = await probe(c, id, { type, data: () => sampleEndpoint(type, endpoint) });
      return probeResult(result);
    },

    async verify(c: Caller, id: string): Promise<VerifyResult> {
      const { result, verified } = await probe(c, id, { type: VERIFY_EVENT_TYPE, data: () => ({ endpoint_id: id }) });
      if (result.outcome !== "delivered") return { ...probeResult(result), verified };
      if (!(await repo.markVerified(c.organizationId, id))) throw notFound();
      return { ...probeResult(result), verified: true };
    },

    /** Its deliveries go with it, so a job already on the stream finds nothing to send. */
    async remove(c: Caller, id: string): Promise<{ id: string }> {
      // In a transaction, so a deadlock with the delivery machinery (the cascade locks every delivery) is retried.
      const removed = await tx(async (r) => {
        if (!(await r.remove(c.organizationId, id))) return false;
        await r.audit.write(audited(c, id, "webhook_endpoint.deleted"));
        return true;
      });
      if (!removed) throw notFound();
      res.audited();
      return { id };
    },
  };
}
export type EndpointsService = ReturnType<typeof endpointsService>;
