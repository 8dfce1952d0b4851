// The admin CLI as the benches call it: one process a command, JSON out, against one namespace.
import { spawnSync } from "node:child_process";

/** `admin(command, ...args)` running tools/admin in `root` on NATS `natsUrl`, namespace `namespace`; its parsed JSON. */
export function adminCli(root, natsUrl, namespace) {
  return (...args) => {
    const r = spawnSync(process.execPath, ["tools/admin/dist/main.js", ...args, "--json"], {
      cwd: root,
      env: { ...process.env, NATS_URL: natsUrl, NATS_NAMESPACE: namespace },
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`admin ${args[0]} failed: ${r.stderr}`);
    return JSON.parse(r.stdout);
  };
}
