import { createServer, type Server } from "node:http";
import type { Health } from "./health.js";
import { registry } from "./metrics.js";

export interface OpsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Nothing else, and nothing that reads a body. */
export async function startOpsServer(opts: { port: number; host?: string; health: Health }): Promise<OpsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.writeHead(405, { allow: "GET, HEAD" }).end();
      return;
    }
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" }).end(JSON.stringify(body));
    };
    if (path === "/healthz") return json(200, { status: "ok" });
    if (path === "/readyz") {
      void opts.health.readiness().then(
        (r) => json(r.ready ? 200 : 503, { status: r.ready ? "ready" : "not_ready", checks: r.checks }),
        () => json(503, { status: "not_ready" }),
      );
      return;
    }
    if (path === "/metrics") {
      void registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500, { "content-type": "text/plain" }).end(`metrics failed: ${String(err)}\n`),
      );
      return;
    }
    json(404, { status: "not_found", paths: ["/metrics", "/healthz", "/readyz"] });
  });
  // A probe that hangs must not hold the process at stop.
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host ?? "0.0.0.0", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : opts.port;
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
