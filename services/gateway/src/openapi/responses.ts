import { ERROR_CATALOG, ERROR_CODES, type ErrorCode, FieldError } from "@tasksvc/contracts";
import { z } from "zod";
import type { Json } from "./schemas.js";

export const Problem = z.object({
  type: z.string().meta({
    description: "URL of the code's entry on the errors page: `<this API's base URL>/docs/errors#<code>`",
    examples: ["https://api.example.com/docs/errors#validation_failed"],
  }),
  title: z.string().meta({ description: "A short, human summary of the code.", examples: ["Validation failed"] }),
  status: z
    .number()
    .int()
    .meta({ description: "The HTTP status, repeated.", examples: [400] }),
  code: z
    .enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]])
    .meta({ description: "The stable, machine-readable error code: branch on it.", examples: ["validation_failed"] }),
  detail: z.string().meta({ description: "What went wrong with this request, for a person.", examples: ["The request body is invalid: /name is required"] }),
  request_id: z
    .string()
    .optional()
    .meta({ description: "Present on 5xx; also in the x-request-id header", examples: ["req_e903a3119ecb434ab66f13614829a34b"] }),
  errors: z
    .array(FieldError)
    .optional()
    .meta({ description: "Field errors, each with an RFC 6901 pointer", examples: [[{ pointer: "/name", message: "is required" }]] }),
});

export const header = (description: string, schema: Json = { type: "string" }) => ({ description, schema });
export const REQUEST_ID = header("Unique id of this request; quote it in support requests.");
export const RATE_HEADERS = {
  "RateLimit-Policy": header('Structured field: `"burst";q=<allowance>;w=<seconds>, "api-calls";q=<allowance>;w=<seconds>`'),
  RateLimit: header('Structured field: `"burst";r=<remaining>;t=<seconds to reset>`'),
  "X-RateLimit-Limit": header("Burst allowance of the credential", { type: "integer" }),
  "X-RateLimit-Remaining": header("Calls left in the current burst window", { type: "integer" }),
  "X-RateLimit-Reset": header("Unix epoch seconds when the burst window resets", { type: "integer" }),
};

export function problemResponse(codes: ErrorCode[], extraHeaders: Json = {}): Json {
  const examples = Object.fromEntries(
    codes.map((c) => [
      c,
      {
        summary: ERROR_CATALOG[c].title,
        value: {
          type: `https://api.example.com/docs/errors#${c}`,
          title: ERROR_CATALOG[c].title,
          status: ERROR_CATALOG[c].status,
          code: c,
          detail: `${ERROR_CATALOG[c].title}.`,
        },
      },
    ]),
  );
  return {
    description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOG[c].title}`).join("; "),
    headers: { "x-request-id": REQUEST_ID, ...extraHeaders },
    content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" }, examples } },
  };
}

export function codesWithStatus(status: number): ErrorCode[] {
  return ERROR_CODES.filter((c) => ERROR_CATALOG[c].status === status);
}

/** OpenAPI has no place for the answer to a method a path does not serve, so each operation names it. */
export const METHOD_NOT_ALLOWED_REF = { $ref: "#/components/responses/MethodNotAllowed" };
export const methodNotAllowed = (): Json =>
  problemResponse(["method_not_allowed"], {
    Allow: header("The methods this path serves, e.g. `GET, HEAD, PATCH`"),
  });
