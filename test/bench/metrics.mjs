// After a bench run: what each process's /metrics shows (issue 13: every family with real values).
// Prints, per process, the tasksvc_ families that have samples and a few headline figures.

/** Prometheus text → Map<series, value> (comments skipped). */
function parse(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

const sum = (m, prefix, filter = "") => [...m].filter(([k]) => k.startsWith(prefix) && k.includes(filter)).reduce((n, [, v]) => n + v, 0);

/** The value under which `q` of a histogram's observations fall (from its cumulative buckets). */
function quantile(m, family, q) {
  const buckets = [...m]
    .filter(([k]) => k.startsWith(`${family}_bucket{`))
    .map(([k, v]) => ({ le: k.includes('le="+Inf"') ? Infinity : Number(/le="([^"]+)"/.exec(k)?.[1]), v }));
  const byLe = new Map();
  for (const b of buckets) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.v);
  const sorted = [...byLe].sort((a, b) => a[0] - b[0]);
  const total = sorted.at(-1)?.[1] ?? 0;
  if (total === 0) return NaN;
  return sorted.find(([, v]) => v >= q * total)?.[0] ?? NaN;
}

export async function metricsSnapshot(processes) {
  const rows = [];
  for (const { name, url } of processes) {
    let m;
    try {
      m = parse(await (await fetch(`${url}/metrics`)).text());
    } catch (e) {
      rows.push({ name, url, error: String(e) });
      continue;
    }
    const families = new Set([...m.keys()].filter((k) => k.startsWith("tasksvc_")).map((k) => k.replace(/\{.*$/, "").replace(/_(bucket|sum|count)$/, "")));
    const headline = [];
    const ms = (s) => (Number.isFinite(s) ? `${(s * 1000).toFixed(0)} ms` : "n/a");
    if (name === "gateway") {
      headline.push(`${sum(m, "tasksvc_http_request_duration_seconds_count").toLocaleString("en-US")} requests`);
      headline.push(`p99 ≤ ${ms(quantile(m, "tasksvc_http_request_duration_seconds", 0.99))}`);
      headline.push(`${sum(m, "tasksvc_rpc_client_duration_seconds_count").toLocaleString("en-US")} RPCs`);
    } else if (name === "tasks") {
      headline.push(`${sum(m, "tasksvc_rpc_server_duration_seconds_count").toLocaleString("en-US")} RPCs served`);
      headline.push(`${sum(m, "tasksvc_outbox_published_total").toLocaleString("en-US")} events published`);
      headline.push(`relay p99 ≤ ${ms(quantile(m, "tasksvc_outbox_relay_delay_seconds", 0.99))}`);
      headline.push(`backlog ${sum(m, "tasksvc_outbox_backlog_rows")}`);
    } else if (name === "webhooks") {
      headline.push(`${sum(m, "tasksvc_jetstream_messages_total", 'outcome="ack"').toLocaleString("en-US")} events fanned out`);
      headline.push(`${sum(m, "tasksvc_webhook_deliveries_finished_total", "SUCCEEDED").toLocaleString("en-US")} deliveries succeeded`);
      headline.push(`consumer pending ${sum(m, "tasksvc_jetstream_consumer_pending_messages")}`);
    } else if (name === "delivery") {
      headline.push(`${sum(m, "tasksvc_webhook_attempts_total", 'outcome="delivered"').toLocaleString("en-US")} calls delivered`);
      headline.push(
        `end-to-end p50 ≤ ${ms(quantile(m, "tasksvc_webhook_delivery_lag_seconds", 0.5))}, p99 ≤ ${ms(quantile(m, "tasksvc_webhook_delivery_lag_seconds", 0.99))}`,
      );
    } else {
      headline.push(`${sum(m, "tasksvc_rpc_server_duration_seconds_count").toLocaleString("en-US")} RPCs served`);
    }
    headline.push(`db tx ${sum(m, "tasksvc_db_transaction_duration_seconds_count").toLocaleString("en-US")}`);
    rows.push({ name, url, families: [...families].sort(), headline });
  }
  return rows;
}

export function printMetricsSnapshot(rows) {
  console.log("\nMetrics after the run (each process's /metrics; tasksvc_ families with samples, headline figures)");
  for (const r of rows) {
    if (r.error) {
      console.log(`  ${r.name.padEnd(13)} ${r.url}/metrics  unreachable: ${r.error}`);
      continue;
    }
    console.log(`  ${r.name.padEnd(13)} ${r.url}/metrics  ${r.families.length} families · ${r.headline.join(" · ")}`);
  }
}
