// The benchmark's webhook receiver (npm run bench): a keep-alive HTTP server on 127.0.0.1 (port
// chosen free, printed as "ready <port>"). Paths under /hang/ never answer (the delivery worker's
// timeout ends them); every other path answers 204 at once and records, per path prefix, the
// event-to-receiver latency: arrival time minus the event's `timestamp`, which the tasks service
// sets in the writing transaction. GET /stats answers {arrivals: [[at, latency, webhook-id, path
// prefix]]} and starts afresh; the prefix (`/ok/`, `/limited/`) tells endpoint groups apart.
import http from "node:http";

let arrivals = [];
const server = http.createServer((req, res) => {
  if (req.method === "GET" && req.url === "/stats") {
    const body = JSON.stringify({ arrivals });
    arrivals = [];
    res.writeHead(200, { "content-type": "application/json" }).end(body);
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    if (req.url?.startsWith("/hang/")) return; // held until the caller gives up
    const at = Date.now();
    res.writeHead(204).end();
    try {
      const event = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      arrivals.push([at, at - Date.parse(event.timestamp), req.headers["webhook-id"], /^\/[^/]*\//.exec(req.url ?? "")?.[0] ?? "/"]);
    } catch {
      // Not an event: nothing to record.
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`));
