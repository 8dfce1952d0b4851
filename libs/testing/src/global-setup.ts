import type {} from "vitest";
import type { TestProject } from "vitest/node";
import { startStack, type StackInfo } from "./stack.js";

declare module "vitest" {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}

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
