import { loadConfigOrExit, settings } from "@tasksvc/config";
import { keysRpc } from "@tasksvc/contracts";
import { client, connectNats, type NatsConnection } from "@tasksvc/nats";
import { z } from "zod";
import { runCli } from "./cli.js";

const cfg = loadConfigOrExit(z.object({ NATS_URL: settings.NATS_URL, NATS_NAMESPACE: settings.NATS_NAMESPACE, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS }));

let nc: NatsConnection | undefined;
let code: number;
try {
  code = await runCli(
    process.argv.slice(2),
    async () => {
      nc = await connectNats({ url: cfg.NATS_URL, name: "admin-cli" });
      return client(nc, keysRpc, { namespace: cfg.NATS_NAMESPACE, timeoutMs: cfg.RPC_TIMEOUT_MS });
    },
    { out: (l) => process.stdout.write(`${l}\n`), err: (l) => process.stderr.write(`${l}\n`) },
  );
} catch (e) {
  process.stderr.write(`admin: ${e instanceof Error ? e.message : String(e)}\n`);
  code = 1;
}
await nc?.close();
process.exit(code);
