#!/usr/bin/env node
import { loadConfigOrExit, settings } from "@tasksvc/config";
import { keysRpc } from "@tasksvc/contracts";
import { client, connectNats, NatsUnreachableError, type NatsConnection } from "@tasksvc/nats";
import { z } from "zod";
import { runCli, unreachable } from "./cli.js";

// The `tasksvc-admin` bin (and `npm run admin --`): stdout carries only the result, so `npx tasksvc-admin … --json | jq` works; everything else goes to stderr.
const cfg = loadConfigOrExit(z.object({ NATS_URL: settings.NATS_URL, NATS_NAMESPACE: settings.NATS_NAMESPACE, RPC_TIMEOUT_MS: settings.RPC_TIMEOUT_MS }));
const target = { natsUrl: cfg.NATS_URL, namespace: cfg.NATS_NAMESPACE };

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
    target,
  );
} catch (e) {
  // "cannot reach NATS at NATS_URL=… (the cause): …": the cause, in the CLI's own line.
  const reason = e instanceof NatsUnreachableError ? /\((.*)\): /.exec(e.message)?.[1] : undefined;
  process.stderr.write(
    e instanceof NatsUnreachableError
      ? `${unreachable(target, `cannot reach NATS${reason ? ` (${reason})` : ""}`)}\n`
      : `admin: ${e instanceof Error ? e.message : String(e)}\n`,
  );
  code = 1;
}
await nc?.close();
process.exit(code);
