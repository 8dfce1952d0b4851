import { Counter, Gauge } from "prom-client";
import { registry } from "./metrics.js";

/** The families of the limits that keep tenants apart (decision 0031). */
const registers = [registry];

export const httpEdgeRefused = new Counter({
  name: "tasksvc_http_edge_refused_total",
  help: "Requests the gateway refused at its HTTP edge before any route ran, by reason: body_timeout (408), pipelined (429 past the per-connection bound), anonymous_rate (429 on a route without credential), malformed (400), too_large (413, 431).",
  labelNames: ["reason"] as const,
  registers,
});

export const rpcDeadlineExpired = new Counter({
  name: "tasksvc_rpc_deadline_expired_total",
  help: "NATS requests not started because their caller's deadline had passed when they were received, by service and operation.",
  labelNames: ["service", "operation"] as const,
  registers,
});

export const rpcReplyTooLarge = new Counter({
  name: "tasksvc_rpc_reply_too_large_total",
  help: "NATS replies larger than the connection's max_payload, answered with a 500 instead (a page without a byte budget, or an answer that grew past the limit), by service and operation.",
  labelNames: ["service", "operation"] as const,
  registers,
});

export const dbScanRefused = new Counter({
  name: "tasksvc_db_scan_refused_total",
  help: "Scanning reads (lists, searches, feeds) refused with 429 because their organization already held its share of the service's connections, by service.",
  labelNames: ["service"] as const,
  registers,
});

export const dbScanTooExpensive = new Counter({
  name: "tasksvc_db_scan_too_expensive_total",
  help: "Scanning reads stopped at the statement time limit or their caller's deadline (answered 400 query_too_expensive), by service and operation.",
  labelNames: ["service", "operation"] as const,
  registers,
});

export const dbScansInFlight = new Gauge({
  name: "tasksvc_db_scans_in_flight",
  help: "Scanning reads holding a connection now, by service.",
  labelNames: ["service"] as const,
  registers,
});
