import { MAX_STREAMS_PER_CREDENTIAL, MAX_STREAMS_PER_ORGANIZATION, STREAM_EXAMPLE } from "@tasksvc/contracts";
import type { Operation } from "../pipeline/operation.js";

type Json = Record<string, unknown>;
type ProblemResponse = (codes: ["precondition_failed"], extraHeaders: Json) => Json;

const ETAG = {
  description: 'The task\'s version in quotes (`"3"`): send it back in If-Match to change the task only if nobody changed it meanwhile.',
  schema: { type: "string" },
};

export function conditionalParameters(def: Operation): Json[] {
  if (def.eventStream)
    return [
      {
        name: "Last-Event-ID",
        in: "header",
        required: false,
        description:
          "Resume after this event: the `id:` of the last message received (an EventSource sends it by itself when it reconnects). Wins over `after`.",
        schema: { type: "string" },
      },
    ];
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
      {
        name: "If-None-Match",
        in: "header",
        required: false,
        description:
          'Change the task only if it is not at this version: its ETag (`"3"`), several separated by commas, or `*` (which any existing task matches). On a match, 412 precondition_failed with the current ETag, and nothing changes.',
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

export function addConditionalResponses(def: Operation, successHeaders: Json, responses: Record<string, Json>, problemResponse: ProblemResponse): void {
  const ok = responses[String(def.status)];
  if (def.eventStream && ok) {
    ok["description"] =
      "A stream of Server-Sent Events, one message per task event: `id:` the event's id (its webhook-id), `event:` its type, `data:` the event as GET /v1/events lists it (this schema). " +
      "A comment line (`: keep-alive`) comes every 15 seconds. When the stream ends (the server stops, or the client fell too far behind), reconnect with Last-Event-ID: nothing is missed and nothing comes twice. " +
      `At most ${MAX_STREAMS_PER_CREDENTIAL} streams per credential and ${MAX_STREAMS_PER_ORGANIZATION} per organization are open at once (past that, 429); a stream ends when its credential is revoked or expires.`;
    ok["content"] = {
      "text/event-stream": {
        schema: { type: "string", description: "Server-Sent Events; each message's `data:` is an `Event` object in JSON." },
        example: STREAM_EXAMPLE,
      },
    };
  }
  if (def.etag) successHeaders["ETag"] = ETAG;
  if (def.preconditions === "if-none-match")
    responses["304"] = { description: "Not modified: the task is still at the version If-None-Match named", headers: { ETag: ETAG } };
  if (def.preconditions === "if-match")
    responses["412"] = problemResponse(["precondition_failed"], { ETag: { ...ETAG, description: "The task's current ETag" } });
}
