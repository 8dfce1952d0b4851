import type { TestProject } from "vitest/node";
import "./context.js";
import { startStack } from "./stack.js";

/** Vitest global setup: one stack per test run, shared by every test file. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const stack = await startStack();
  project.provide("stack", {
    gatewayUrls: stack.gatewayUrls,
    databaseUrl: stack.databaseUrl,
    natsUrl: stack.natsUrl,
    namespace: stack.namespace,
  });
  return () => stack.stop();
}
