// Baseline 2: fastify → one NATS request/reply → echo responder in another process. The floor
// of one gateway → service hop; full-stack figures are reported as a ratio of it.
import Fastify from "fastify";
import { connect } from "@nats-io/transport-node";

const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
const subject = `${process.env.NATS_NAMESPACE}.bench.echo`;
const payload = new TextEncoder().encode(JSON.stringify({ ctx: { request_id: "bench" }, input: { ok: true } }));
const app = Fastify({ logger: false });
app.get("/", async (_req, reply) => {
  const m = await nc.request(subject, payload, { timeout: 5000 });
  return reply.type("application/json").send(m.string());
});
await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
console.log("ready");
