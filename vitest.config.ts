import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/*/test/**/*.test.ts", "services/*/test/**/*.test.ts", "tools/*/test/**/*.test.ts", "test/e2e/**/*.test.ts", "test/arch/**/*.test.ts"],
    // One stack (own database, own NATS namespace) per run, shared by all files.
    globalSetup: ["./libs/testing/dist/global-setup.js"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    // Tests talk to real services over the network; two cores, so keep workers few.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
