// MCP scenarios of the benchmark (BENCH_ONLY=mcp), run by run.mjs on its stack: an MCP tools/call
// of get_task and of search_tasks beside the REST requests they stand for, each pair in the same
// run, at the same connections, on the bench's seeded tenant. A tool call is its REST request
// injected through the gateway's pipeline, so the difference is what MCP itself costs: the
// JSON-RPC envelope, the SDK's protocol object and transport, the injected request, the answer
// serialized twice (structured content and its short text). Reported against the target (asserted
// nowhere): an MCP call at most 1.5× the CPU ms per request of its REST equivalent.

const CONNECTIONS = 16;
const SEARCH = { filter: { field: "archived", op: "eq", value: false }, sort: "-updated_at", limit: 25 };

const mcpCall = (key, name, args) => ({
  method: "POST",
  path: "/mcp",
  headers: {
    authorization: `Bearer ${key}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
  },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
});

/** Pairs of { rest, mcp } measurements, each with CPU ms per request of every process. */
export async function mcpScenarios({ gateway, key, measure, log }) {
  const alone = async (req) => {
    const r = await fetch(`${gateway}${req.path}`, { method: req.method, headers: req.headers, body: req.body });
    const text = await r.text();
    if (r.status !== 200 || text.includes('"isError":true')) throw new Error(`${req.method} ${req.path} failed alone: ${r.status} ${text.slice(0, 500)}`);
  };
  const pairs = [
    {
      name: "get_task",
      rest: { method: "GET", path: "/v1/tasks/T-1", headers: { authorization: `Bearer ${key}` } },
      mcp: mcpCall(key, "get_task", { task_id: "T-1" }),
    },
    {
      name: "search_tasks (page of 25)",
      rest: {
        method: "POST",
        path: "/v1/tasks/search",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(SEARCH),
      },
      mcp: mcpCall(key, "search_tasks", SEARCH),
    },
  ];
  const out = [];
  for (const p of pairs) {
    await alone(p.rest);
    await alone(p.mcp);
    log(`bench: mcp ${p.name}`);
    const rest = await measure(`REST for ${p.name}`, p.rest, CONNECTIONS);
    const mcp = await measure(`MCP ${p.name}`, p.mcp, CONNECTIONS);
    out.push({ name: p.name, rest, mcp });
  }
  return { connections: CONNECTIONS, pairs: out };
}

export function printMcp(result) {
  const fmt = (n, d = 0) => (Number.isFinite(n) ? n.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d }) : "n/a");
  console.log(
    `\nMCP tool calls beside their REST requests · ${result.connections} connections · target (reported, not asserted): MCP CPU ms/request ≤ 1.5× REST`,
  );
  for (const { name, rest, mcp } of result.pairs) {
    const ratio = mcp.cpu.total / rest.cpu.total;
    console.log(
      `\n${name}: REST ${fmt(rest.rps)} req/s, p99 ${fmt(rest.p99, 1)} ms · MCP ${fmt(mcp.rps)} req/s, p99 ${fmt(mcp.p99, 1)} ms · non-2xx ${fmt(rest.non2xx)}/${fmt(mcp.non2xx)} · CPU ms/request MCP/REST ${ratio.toFixed(2)}× ${ratio <= 1.5 ? "(within target)" : "(over target)"}`,
    );
    const names = [...new Set([...Object.keys(rest.cpu), ...Object.keys(mcp.cpu)])].filter((k) => k !== "total");
    const rows = [...names, "total"].map((k) => [
      k,
      fmt(rest.cpu[k] ?? 0, 3),
      fmt(mcp.cpu[k] ?? 0, 3),
      rest.cpu[k] ? `${((mcp.cpu[k] ?? 0) / rest.cpu[k]).toFixed(2)}×` : "n/a",
    ]);
    const head = ["process", "REST CPU ms/req", "MCP CPU ms/req", "MCP/REST"];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (cells) => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
    console.log(line(head));
    console.log(widths.map((w) => "-".repeat(w)).join("  "));
    for (const r of rows) console.log(line(r));
  }
}
