// The matched baselines' front: fastify → one NATS request/reply → the matched responder, one
// route per scenario, answering the responder's bytes.
import Fastify from "fastify";
import { connect } from "@nats-io/transport-node";

const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true, name: "matched-server" });
const app = Fastify({ logger: false });
const forward = (name, status) => async (req, reply) => {
  const m = await nc.request(`${process.env.NATS_NAMESPACE}.matched.${name}`, req.body === undefined ? new Uint8Array() : JSON.stringify(req.body), {
    timeout: 10_000,
  });
  return reply
    .code(m.string().startsWith('{"error"') ? 500 : status)
    .type("application/json")
    .send(Buffer.from(m.data.buffer, m.data.byteOffset, m.data.length));
};
for (const name of ["orgs", "task", "page", "board"]) app.get(`/${name}`, forward(name, 200));
for (const name of ["create", "create_custom", "apikey"]) app.post(`/${name}`, forward(name, 201));
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
console.log(`ready ${app.server.address().port}`);
// Exits on SIGTERM like the services, so a --cpu-prof profile is written.
process.on("SIGTERM", () => process.exit(0));
