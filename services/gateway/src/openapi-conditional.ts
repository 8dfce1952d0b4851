import type { Operation } from "./operations.js";

type Json = Record<string, unknown>;
type ProblemResponse = (codes: ["precondition_failed"], extraHeaders: Json) => Json;

const ETAG = {
  description: 'The task\'s version in quotes (`"3"`): send it back in If-Match to change the task only if nobody changed it meanwhile.',
  schema: { type: "string" },
};

/** The conditional request headers an operation honours. */
export function conditionalParameters(def: Operation): Json[] {
  if (def.preconditions === "if-match")
    return [
      {
        name: "If-Match",
        in: "header",
        required: false,
        description:
          'Change the task only if it is still at this version: its ETag (`"3"`), several separated by commas, or `*`. Otherwise 412 precondition_failed with the current ETag, and nothing changes.',
        // No example: "Try it out" would send it with every request and meet a 412.
        schema: { type: "string" },
      },
    ];
  if (def.preconditions === "if-none-match")
    return [
      {
        name: "If-None-Match",
        in: "header",
        required: false,
        description: 'The ETag of the copy you hold (`"3"`): when the task is still at that version, 304 with no body.',
        schema: { type: "string" },
      },
    ];
  return [];
}

/** The ETag header on the success answer, and the 304 or 412 the operation's precondition may answer. */
export function addConditionalResponses(def: Operation, successHeaders: Json, responses: Record<string, Json>, problemResponse: ProblemResponse): void {
  if (def.etag) successHeaders["ETag"] = ETAG;
  if (def.preconditions === "if-none-match")
    responses["304"] = { description: "Not modified: the task is still at the version If-None-Match named", headers: { ETag: ETAG } };
  if (def.preconditions === "if-match")
    responses["412"] = problemResponse(["precondition_failed"], { ETag: { ...ETAG, description: "The task's current ETag" } });
}
