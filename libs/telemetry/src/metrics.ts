import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import { settleWithin } from "./bounded.js";

/**
 * Every metric family of the system, the list docs/operations.md turns into a dashboard. Label
 * values are bounded sets, never ids. The test stack's services share one registry, reporting
 * what each would on its own, summed.
 */
export const registry = new Registry();
collectDefaultMetrics({ register: registry });

const LATENCY = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const LAG = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 7200, 36_000, 86_400];

const registers = [registry];

export const httpRequestDuration = new Histogram({
  name: "tasksvc_http_request_duration_seconds",
  help: "HTTP requests answered by the gateway, by method, route pattern and status code.",
  labelNames: ["method", "route", "status_code"] as const,
  buckets: LATENCY,
  registers,
});

export const httpRequestsInFlight = new Gauge({
  name: "tasksvc_http_requests_in_flight",
  help: "HTTP requests the gateway is handling now.",
  registers,
});

export const gatewayRefusals = new Counter({
  name: "tasksvc_gateway_refusals_total",
  help: "Requests refused by a gateway policy, by error code (rate_limited, quota_exhausted).",
  labelNames: ["code"] as const,
  registers,
});

export const idempotencyOutcomes = new Counter({
  name: "tasksvc_idempotency_keys_total",
  help: "Idempotency-Key handling at the gateway: first execution, replay, conflict (same key, other request), in progress.",
  labelNames: ["outcome"] as const,
  registers,
});

export const eventStreamsOpen = new Gauge({
  name: "tasksvc_event_streams_open",
  help: "Live event streams this gateway replica holds open now.",
  registers,
});

export const eventStreamMessages = new Counter({
  name: "tasksvc_event_stream_messages_total",
  help: "Events sent on live event streams, by phase: replay (the past a resumed stream catches up on) or live.",
  labelNames: ["phase"] as const,
  registers,
});

export const eventStreamsEnded = new Counter({
  name: "tasksvc_event_streams_ended_total",
  help: "Live event streams ended, by reason: client (it went away), lagging (too far behind, told to resume), revoked (the credential no longer admits it), shutdown (the replica stops), fan_in (the replica's stream of events was interrupted).",
  labelNames: ["reason"] as const,
  registers,
});

export const rpcClientDuration = new Histogram({
  name: "tasksvc_rpc_client_duration_seconds",
  help: "NATS request/reply calls made, by service, operation and outcome code (ok or the error code).",
  labelNames: ["service", "operation", "code"] as const,
  buckets: LATENCY,
  registers,
});

export const rpcServerDuration = new Histogram({
  name: "tasksvc_rpc_server_duration_seconds",
  help: "NATS requests handled, by service, operation and outcome code (ok or the error code).",
  labelNames: ["service", "operation", "code"] as const,
  buckets: LATENCY,
  registers,
});

/** Each served catalog's count of requests in hand, read when the gauge is scraped rather than moved twice per request. */
const rpcInFlightSources = new Map<string, Set<() => number>>();

export const rpcServerInFlight = new Gauge({
  name: "tasksvc_rpc_server_in_flight",
  help: "NATS requests being handled now, by service.",
  labelNames: ["service"] as const,
  registers,
  collect() {
    for (const [service, sources] of rpcInFlightSources) {
      let n = 0;
      for (const size of sources) n += size();
      this.set({ service }, n);
    }
  },
});

/** Counted into tasksvc_rpc_server_in_flight until the returned function is called. */
export function countRpcInFlight(service: string, size: () => number): () => void {
  let sources = rpcInFlightSources.get(service);
  if (!sources) rpcInFlightSources.set(service, (sources = new Set()));
  sources.add(size);
  return () => {
    sources.delete(size);
    if (sources.size === 0) rpcInFlightSources.delete(service);
  };
}

export const outboxPublished = new Counter({
  name: "tasksvc_outbox_published_total",
  help: "Outbox rows published to JetStream (and deleted), by outbox table.",
  labelNames: ["outbox"] as const,
  registers,
});

export const outboxRelayDelay = new Histogram({
  name: "tasksvc_outbox_relay_delay_seconds",
  help: "From a row's commit to its publication acknowledged by JetStream.",
  labelNames: ["outbox"] as const,
  buckets: LAG,
  registers,
});

export const outboxDeadLetters = new Counter({
  name: "tasksvc_outbox_dead_letters_total",
  help: "Outbox rows that can never be published, set aside in the dead-letter table beside the outbox, by outbox table and reason: max_payload (over the connection's limit), max_msg_size (refused by the stream for its size), refused (refused by the NATS client).",
  labelNames: ["outbox", "reason"] as const,
  registers,
});

export const consumerMessages = new Counter({
  name: "tasksvc_jetstream_messages_total",
  help: "JetStream messages handled by this process, by consumer and outcome (ack, nak, term, error).",
  labelNames: ["consumer", "outcome"] as const,
  registers,
});

export const consumerRedeliveries = new Counter({
  name: "tasksvc_jetstream_redeliveries_total",
  help: "JetStream messages this process received on their second or later delivery, by consumer.",
  labelNames: ["consumer"] as const,
  registers,
});

export const consumerHandleDuration = new Histogram({
  name: "tasksvc_jetstream_handle_duration_seconds",
  help: "Time a handler took for one JetStream message, by consumer.",
  labelNames: ["consumer"] as const,
  buckets: LATENCY,
  registers,
});

export const webhookAttempts = new Counter({
  name: "tasksvc_webhook_attempts_total",
  help: "Webhook delivery attempts, by outcome (delivered = 2xx, request_failed, timeout, redirect_blocked, blocked, no_outcome = lease expired).",
  labelNames: ["outcome"] as const,
  registers,
});

export const webhookAttemptsDeferred = new Counter({
  name: "tasksvc_webhook_attempts_deferred_total",
  help: "Attempts a delivery worker gave back unsent (not attempts: they are dispatched again), by stage (arrival: a rate-limited endpoint's job came after its send window; call: waiting for a call slot made it late for its send window; start: the webhooks service answered the start too late to make the whole call within its window). A steady rate means busy workers, a slow webhooks service, or clocks out of step.",
  labelNames: ["stage"] as const,
  registers,
});

export const webhookAttemptDuration = new Histogram({
  name: "tasksvc_webhook_attempt_duration_seconds",
  help: "One outbound webhook HTTP call, from connect to the response status (delivery workers).",
  buckets: LATENCY,
  registers,
});

export const webhookDeliveryLag = new Histogram({
  name: "tasksvc_webhook_delivery_lag_seconds",
  help: "End to end: from the task change to its webhook delivered (2xx), retries included.",
  buckets: LAG,
  registers,
});

export const webhookDeliveriesFinished = new Counter({
  name: "tasksvc_webhook_deliveries_finished_total",
  help: "Deliveries that reached a final state, by state (SUCCEEDED, FAILED, DISABLED).",
  labelNames: ["state"] as const,
  registers,
});

export const webhookEndpointsDisabled = new Counter({
  name: "tasksvc_webhook_endpoints_disabled_total",
  help: "Endpoints disabled automatically, by reason (consecutive_failures, endpoint_gone).",
  labelNames: ["reason"] as const,
  registers,
});

export const recurrenceTickDuration = new Histogram({
  name: "tasksvc_recurrence_tick_seconds",
  help: "One tick of the recurrence scheduler: reading the series due, making occurrences, rollovers, wake-ups.",
  buckets: LATENCY,
  registers,
});

export const recurrenceSeriesRead = new Counter({
  name: "tasksvc_recurrence_series_read_total",
  help: "Series a tick read (their wake-up time had come).",
  registers,
});

export const recurrenceOccurrences = new Counter({
  name: "tasksvc_recurrence_occurrences_total",
  help: "Occurrences of recurring tasks made (tasks created by the scheduler).",
  registers,
});

export const recurrenceRollovers = new Counter({
  name: "tasksvc_recurrence_rollovers_total",
  help: "Unfinished occurrences the scheduler asked onto a board, by outcome (requested: on the rollover stream; failed: asked again next tick).",
  labelNames: ["outcome"] as const,
  registers,
});

export const dueTickDuration = new Histogram({
  name: "tasksvc_due_tick_seconds",
  help: "One tick of the due-date scheduler: finding the tasks whose task.due_soon or task.overdue is owed, marking them, writing the events.",
  buckets: LATENCY,
  registers,
});

export const dueEvents = new Counter({
  name: "tasksvc_due_events_total",
  help: "Due-date events the scheduler wrote to the outbox, by type (task.due_soon, task.overdue).",
  labelNames: ["type"] as const,
  registers,
});

export const boardRollovers = new Counter({
  name: "tasksvc_board_rollovers_total",
  help: "Rollover requests the boards service handled, by outcome (placed; already: placed or removed before for that task and day).",
  labelNames: ["outcome"] as const,
  registers,
});

export const recurrenceFailures = new Counter({
  name: "tasksvc_recurrence_failures_total",
  help: "Series the scheduler could not serve in a tick, by what failed (occurrence, rollover); each is tried again next tick.",
  labelNames: ["what"] as const,
  registers,
});

export const dbTransactionDuration = new Histogram({
  name: "tasksvc_db_transaction_duration_seconds",
  help: "Transactions, from taking a connection slot to commit or rollback, by outcome.",
  labelNames: ["outcome"] as const,
  buckets: LATENCY,
  registers,
});

export const dbTransactionWait = new Histogram({
  name: "tasksvc_db_transaction_wait_seconds",
  help: "Time a transaction waited for a free connection slot (pool saturation).",
  buckets: LATENCY,
  registers,
});

export const dbTransactionSlotTimeouts = new Counter({
  name: "tasksvc_db_transaction_slot_timeouts_total",
  help: "Transactions that failed (503) because no connection slot came free within the wait limit (the database slow or unreachable, or slots stuck).",
  registers,
});

export const natsReconnects = new Counter({
  name: "tasksvc_nats_reconnects_total",
  help: "Times the NATS connection was re-established.",
  registers,
});

export const natsDisconnects = new Counter({
  name: "tasksvc_nats_disconnects_total",
  help: "Times the NATS connection was lost.",
  registers,
});

/** A source that fails or takes too long is left out of that scrape: a scrape never hangs on Postgres or NATS. */
export interface Sample {
  labels?: Record<string, string>;
  value: number;
}
export type SampleSource = () => Promise<Sample[]> | Sample[];

const SOURCE_TIMEOUT_MS = 1000;

function sampledGauge(name: string, help: string, labelNames: readonly string[]) {
  const sources = new Set<SampleSource>();
  new Gauge({
    name,
    help,
    labelNames,
    registers,
    async collect() {
      this.reset();
      const results = await Promise.all([...sources].map((s) => settleWithin<Sample[]>(SOURCE_TIMEOUT_MS, s, [])));
      for (const samples of results) for (const s of samples) s.labels ? this.set(s.labels, s.value) : this.set(s.value);
    },
  });
  return (source: SampleSource): (() => void) => {
    sources.add(source);
    return () => sources.delete(source);
  };
}

export const sampled = {
  outboxBacklog: sampledGauge("tasksvc_outbox_backlog_rows", "Outbox rows not yet published (counted up to 100000), by outbox table.", ["outbox"]),
  outboxOldestAge: sampledGauge(
    "tasksvc_outbox_oldest_row_age_seconds",
    "Age of the oldest unpublished outbox row (relay lag; 0 when empty), by outbox table.",
    ["outbox"],
  ),
  consumerPending: sampledGauge(
    "tasksvc_jetstream_consumer_pending_messages",
    "Messages in the stream not yet delivered to the consumer (server's num_pending).",
    ["consumer"],
  ),
  consumerAckPending: sampledGauge(
    "tasksvc_jetstream_consumer_ack_pending_messages",
    "Messages delivered to the consumer and not yet acknowledged (server's num_ack_pending).",
    ["consumer"],
  ),
  consumerRedelivered: sampledGauge(
    "tasksvc_jetstream_consumer_redelivered_messages",
    "Messages currently outstanding that were delivered more than once (server's num_redelivered).",
    ["consumer"],
  ),
  webhookDeliveries: sampledGauge(
    "tasksvc_webhook_deliveries_live",
    "Deliveries waiting or in flight (PENDING due now, PENDING later, DELIVERING; counted up to 100000).",
    ["state"],
  ),
  dbConnections: sampledGauge(
    "tasksvc_db_connections",
    "This process's Postgres connections by state (active, idle, idle in transaction), from pg_stat_activity.",
    ["state"],
  ),
  dbTransactionSlots: sampledGauge("tasksvc_db_transaction_slots", "Transaction connection slots: in use, waiting for one, and the maximum.", ["state"]),
  dbPrimary: sampledGauge(
    "tasksvc_db_primary",
    "1 while the service's database answers as a writable primary; 0 while it answers as a standby or read-only, or not within a second.",
    [],
  ),
  dbTransactionOldest: sampledGauge(
    "tasksvc_db_transaction_oldest_seconds",
    "Age of the oldest transaction holding a connection slot (in_use) and of the oldest waiting for one (waiting); 0 when none.",
    ["state"],
  ),
  outboxStalled: sampledGauge(
    "tasksvc_outbox_stalled",
    "1 while this replica's outbox relay fails or hangs, has published nothing for OUTBOX_STALL_AFTER and the oldest waiting row is older than that; by outbox table.",
    ["outbox"],
  ),
  natsConnected: sampledGauge("tasksvc_nats_connected", "1 while the NATS connection is up, 0 while it reconnects.", []),
} as const;

/** prom-client hashes a label object on every observe; on the hot paths a Map lookup of a string is cheaper. */
export function seriesCache<L extends string>(h: Histogram<L>): (key: string, labels: Partial<Record<L, string>>) => { observe(v: number): void } {
  const cache = new Map<string, { observe(v: number): void }>();
  return (key, labels) => {
    let s = cache.get(key);
    if (!s) {
      s = h.labels(labels);
      cache.set(key, s);
    }
    return s;
  };
}

export const secondsSince = (t0: number) => (performance.now() - t0) / 1000;
