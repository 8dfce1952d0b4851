#!/usr/bin/env node
// A webhook receiver to try deliveries locally (README, "See a signed delivery").
//
//   WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs        # listens on 127.0.0.1:9000
//   PORT=9001 WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs
//   HOST=0.0.0.0 WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs   # reachable from containers (docker compose)
//
// Every request is verified with `standardwebhooks`, the reference implementation of the
// Standard Webhooks spec (npm i standardwebhooks): the `webhook-signature` header must carry a
// valid HMAC of "<webhook-id>.<webhook-timestamp>.<body>" under the secret, and the timestamp must
// be within 5 minutes. A verified request is answered 204 and printed; anything else gets 400.
// Deliveries are at least once: deduplicate by `webhook-id` (the event id), as done here.
import http from "node:http";
import { Webhook } from "standardwebhooks";

const secret = process.env.WEBHOOK_SECRET;
if (!secret?.startsWith("whsec_")) {
  console.error("Set WEBHOOK_SECRET to the endpoint's signing secret (whsec_…), shown when the endpoint was created or rotated.");
  process.exit(1);
}
const verifier = new Webhook(secret);
const port = Number(process.env.PORT ?? 9000);
const host = process.env.HOST ?? "127.0.0.1";
const seen = new Set();

http
  .createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const headers = {
        "webhook-id": String(req.headers["webhook-id"] ?? ""),
        "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
        "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
      };
      let event;
      try {
        event = verifier.verify(body, headers);
      } catch (err) {
        console.log(`refused ${headers["webhook-id"] || "(no id)"}: ${err.message}`);
        res.writeHead(400).end();
        return;
      }
      const again = seen.has(headers["webhook-id"]);
      seen.add(headers["webhook-id"]);
      const task = event.data ?? {};
      console.log(
        `verified ${event.test === true ? "(test) " : ""}${event.type} ${headers["webhook-id"]}${again ? " (again: already handled)" : ""} ${task.id ?? ""} ${task.title ? JSON.stringify(task.title) : ""}`,
      );
      res.writeHead(204).end();
    });
  })
  .listen(port, host, () => console.log(`listening on http://${host}:${port}/`));
