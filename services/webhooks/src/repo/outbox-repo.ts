import type { EndpointEventType, WebhookEndpoint } from "@tasksvc/contracts";
import { jsonb, newId, type Sql } from "@tasksvc/db";

export interface EventSubject {
  organizationId: string;
  endpoint: WebhookEndpoint;
}

/** The time is the writing transaction's `now()`, as for task events: one clock for every event the feed orders. */
export function outboxRepo(sql: Sql) {
  return {
    async emit(type: EndpointEventType, subjects: readonly EventSubject[]): Promise<void> {
      if (subjects.length === 0) return;
      const rows = subjects.map((s) => ({ id: newId("evt"), organization_id: s.organizationId, data: s.endpoint }));
      await sql`
        insert into outbox (event_id, type, organization_id, payload)
        select r.id, ${type}, r.organization_id,
          jsonb_build_object('id', r.id, 'type', ${type}::text, 'organization_id', r.organization_id,
            'created_at', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'data', r.data)
        from jsonb_to_recordset(${jsonb(sql, rows)}) as r (id text, organization_id text, data jsonb)`;
    },
  };
}
export type OutboxRepo = ReturnType<typeof outboxRepo>;
