import { connect } from "@nats-io/transport-node";

const nc = await connect({ servers: process.env.NATS_URL, noAsyncTraces: true });
nc.subscribe(`${process.env.NATS_NAMESPACE}.bench.echo`, {
  queue: "echo",
  callback: (_err, msg) => msg.respond(msg.data),
});
await nc.flush();
console.log("ready");
