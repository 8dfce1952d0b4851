import { ERROR_CATALOG, type ErrorCode, type FieldError, type RpcError } from "@tasksvc/contracts";
import type { ZodError } from "zod";

export interface AppErrorOptions {
  errors?: FieldError[];
  cause?: unknown;
  /** Sent as Retry-After (429, 503). */
  retryAfter?: number;
  /** Sent with a 412. */
  etag?: string;
}

/** The only error services throw on purpose; it knows nothing of HTTP beyond its code's status. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly retryAfter: number | undefined;
  readonly etag: string | undefined;

  constructor(code: ErrorCode, detail: string, opts: AppErrorOptions = {}) {
    super(detail, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "AppError";
    this.code = code;
    this.status = ERROR_CATALOG[code].status;
    this.errors = opts.errors;
    this.retryAfter = opts.retryAfter;
    this.etag = opts.etag;
  }

  get detail(): string {
    return this.message;
  }

  toRpc(): RpcError {
    return {
      status: this.status,
      code: this.code,
      detail: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
      ...(this.etag === undefined ? {} : { etag: this.etag }),
      ...(this.retryAfter === undefined ? {} : { retry_after: this.retryAfter }),
    };
  }

  static fromRpc(e: RpcError): AppError {
    return new AppError(e.code, e.detail, {
      ...(e.errors ? { errors: e.errors } : {}),
      ...(e.etag === undefined ? {} : { etag: e.etag }),
      ...(e.retry_after === undefined ? {} : { retryAfter: e.retry_after }),
    });
  }
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}

export function toPointer(path: ReadonlyArray<PropertyKey>, prefix = ""): string {
  const tail = path.map((p) => "/" + String(p).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
  return prefix + tail;
}

/** `prefix` places them in the request ("" for the body). */
export function zodFieldErrors(err: ZodError, prefix = ""): FieldError[] {
  return err.issues.flatMap((i) =>
    // An unknown field is named by its own pointer, not by its parent's.
    i.code === "unrecognized_keys"
      ? i.keys.map((k) => ({ pointer: toPointer([...i.path, k], prefix), message: "is not a recognized field" }))
      : [{ pointer: toPointer(i.path, prefix) || "/", message: i.message }],
  );
}

export function validationError(err: ZodError, prefix = "", what = "The request"): AppError {
  const errors = zodFieldErrors(err, prefix);
  const first = errors[0];
  const detail = first ? `${what} is invalid: ${first.pointer} ${first.message}` : `${what} is invalid`;
  return new AppError("validation_failed", detail, { errors });
}

export function fieldError(pointer: string, message: string): AppError {
  return new AppError("validation_failed", `${pointer} ${message}`, { errors: [{ pointer, message }] });
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  request_id?: string;
  errors?: FieldError[];
}

/** `type` is relative, so it resolves against whatever host serves the API; only 5xx carry request_id in the body. */
export function toProblem(err: AppError, requestId: string, typeBase = ""): Problem {
  const entry = ERROR_CATALOG[err.code];
  const problem: Problem = {
    type: `${typeBase}/docs/errors#${err.code}`,
    title: entry.title,
    status: entry.status,
    code: err.code,
    detail: err.message,
  };
  if (err.errors && err.errors.length > 0) problem.errors = err.errors;
  if (entry.status >= 500) problem.request_id = requestId;
  return problem;
}
