#!/usr/bin/env node
// The admin CLI's entry as committed source, not build output: npm links a workspace's bin when
// it installs, before any build, so the link must point at a file a fresh clone already has.
import { existsSync } from "node:fs";

const main = new URL("../dist/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("tasksvc-admin is not built yet: run `make build` (or `make run`, which builds) in the repository first\n");
  process.exit(1);
}
await import(main.href);
