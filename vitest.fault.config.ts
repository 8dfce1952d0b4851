import { defineConfig } from "vitest/config";

/**
 * The fault suite (issue 9): each file starts its own stack as separate processes (and, where it
 * must kill them, its own private Postgres and NATS), so files run one at a time and print their
 * figures. Run by `make test` after the main suite, or alone with `make fault`.
 */
export default defineConfig({
  test: {
    include: ["test/fault/**/*.test.ts"],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    // Figures are printed with console.log; show them even when the test passes.
    silent: false,
  },
});
