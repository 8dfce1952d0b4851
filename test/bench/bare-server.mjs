// Baseline 1: the cheapest fastify JSON route on this machine.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.get("/", async () => ({ ok: true }));
await app.listen({ port: Number(process.env.PORT), host: "127.0.0.1" });
console.log("ready");
