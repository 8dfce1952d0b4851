import type { Caller, CreatedWebhookEndpoint, CreateWebhookEndpointBody, UpdateWebhookEndpointBody, WebhookEndpoint } from "@tasksvc/contracts";
import { idempotentWrite, newId } from "@tasksvc/db";
import { AppError, fieldError } from "@tasksvc/errors";
import { checkUrl, EgressRefused, newSigningSecret, type SecretBox } from "@tasksvc/outbound";
import type { EndpointsRepo } from "../repo/endpoints-repo.js";

export interface EndpointsDeps {
  repo: EndpointsRepo;
  tx<T>(fn: (repo: EndpointsRepo) => Promise<T>): Promise<T>;
  /** Seals signing secrets under WEBHOOK_SECRET_KEY. */
  box: SecretBox;
  /** WEBHOOK_ALLOW_HTTP: accept http: destinations (local use). */
  allowHttp: boolean;
}

/**
 * What the create records under its Idempotency-Key: the endpoint and its secret SEALED, so the
 * service's idempotency table never holds a plain secret; a replay opens it again (decision 0013).
 */
interface CreateRecord {
  endpoint: WebhookEndpoint;
  secret_sealed: string;
}

const notFound = () => new AppError("resource_not_found", "No webhook endpoint with that id exists in this organization.");

export function endpointsService(deps: EndpointsDeps) {
  const { repo, box } = deps;

  /** The destination rules that depend on settings (scheme, userinfo); the length is the schema's. */
  function destination(url: string): string {
    try {
      checkUrl(url, { allowHttp: deps.allowHttp });
      return url;
    } catch (e) {
      if (e instanceof EgressRefused) throw fieldError("/url", e.message);
      throw e;
    }
  }

  return {
    async create(c: Caller, b: CreateWebhookEndpointBody): Promise<CreatedWebhookEndpoint> {
      const url = destination(b.url);
      const record = await idempotentWrite<EndpointsRepo, undefined, CreateRecord>({
        records: repo.idempotency,
        tx: deps.tx,
        credentialId: c.credentialId,
        key: c.idempotencyKey,
        operation: "createEndpoint",
        async work(r) {
          // Minted inside the work: a deadlock retry mints again, and only the committed one counts.
          const secretSealed = box.seal(newSigningSecret());
          const endpoint = await r.insert({ id: newId("whe"), organizationId: c.organizationId, url, eventTypes: b.event_types ?? [], secretSealed });
          return { endpoint, secret_sealed: secretSealed };
        },
      });
      return { ...record.endpoint, secret: box.open(record.secret_sealed) };
    },

    list: (c: Caller, limit: number, after: string | undefined) => repo.list(c.organizationId, limit, after),

    async get(c: Caller, id: string): Promise<WebhookEndpoint> {
      const e = await repo.get(c.organizationId, id);
      if (!e) throw notFound();
      return e;
    },

    async update(c: Caller, id: string, patch: UpdateWebhookEndpointBody): Promise<WebhookEndpoint> {
      const url = patch.url === undefined ? undefined : destination(patch.url);
      const e = await repo.update(c.organizationId, id, { ...patch, url });
      if (!e) throw notFound();
      return e;
    },

    /** Hard delete (spec 4.1); deliveries will cascade with it once they exist. */
    async remove(c: Caller, id: string): Promise<{ id: string }> {
      if (!(await repo.remove(c.organizationId, id))) throw notFound();
      return { id };
    },
  };
}
export type EndpointsService = ReturnType<typeof endpointsService>;
