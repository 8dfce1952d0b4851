import type {} from "vitest";
import type { StackInfo } from "./stack.js";

/** What the global setup provides to every test file: `inject("stack")`. */
declare module "vitest" {
  export interface ProvidedContext {
    stack: StackInfo;
  }
}
