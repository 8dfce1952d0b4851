import createFetchClient, { type Client, type Middleware } from "openapi-fetch";
import pRetry, { AbortError } from "p-retry";
import { type EventStreamOptions, streamEvents as openEventStream } from "./event-stream.js";
import { IDEMPOTENT_OPERATIONS } from "./idempotent.js";
import { type JobLike, type JobStatus, pollJob, type WaitForJobOptions } from "./jobs.js";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };
export type { EventStreamOptions, EventType } from "./event-stream.js";
export { JobTimeoutError, type JobStatus, type WaitForJobOptions } from "./jobs.js";
export {
  type CustomCondition,
  type CustomValue,
  type DateOnly,
  type DateTime,
  type FieldsWith,
  type FilterField,
  type FilterOp,
  type FilterValues,
  TASK_FILTER_OPS,
  type TaskCondition,
  type TaskFilter,
  where,
} from "./filters.js";
/** The API's resources by name: `Schemas["Task"]`, `Schemas["WebhookEndpoint"]`, … */
export type Schemas = components["schemas"];
/** An RFC 9457 problem, as every error of the API is. */
export type Problem = Schemas["Problem"];

export interface ClientOptions {
  /** The gateway, e.g. `https://api.example.com` (paths start at `/v1/…`). */
  baseUrl: string;
  /** An API key (`svc_live_…`) or an OAuth access token, sent as `Authorization: Bearer …`. */
  token: string;
  /**
   * Tries after the first (default 4; 0: none). A 429 within `maxRetryAfterMs` is retried for any request, since nothing ran; a network
   * error, 5xx or 409 `idempotency_in_progress` only where a retry cannot act twice (reads, PUT, DELETE, writes with an Idempotency-Key).
   */
  retries?: number;
  /** Longest wait between tries after a network error, a 5xx or a 409 (default 5 s). */
  maxDelayMs?: number;
  /** Longest Retry-After of a 429 waited out (default 60 s, the burst window); a 429 asking for longer, or with none, comes back at once. */
  maxRetryAfterMs?: number;
  /** A fetch of your own (tests, proxies); the global fetch by default. */
  fetch?: typeof fetch;
  /** Makes the Idempotency-Key of a write that takes one and has none (default: a random UUID). */
  idempotencyKey?: () => string;
}

/** An answer that is a problem: its status, code and fields, and the problem as sent. */
export class TasksvcError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problem: Partial<Problem>;
  readonly requestId: string | null;
  /** The resource's current ETag, when the answer has one: on a 412 precondition_failed, the version to read. */
  readonly etag: string | null;
  constructor(status: number, problem: Partial<Problem>, requestId: string | null, etag: string | null = null) {
    super(`${status} ${problem.code ?? "error"}: ${problem.detail ?? problem.title ?? "request failed"}`);
    this.name = "TasksvcError";
    this.status = status;
    this.code = problem.code ?? "unknown";
    this.problem = problem;
    this.requestId = requestId;
    this.etag = etag;
  }
}

/** RFC 9110's idempotent methods. */
const REPEATABLE_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE"]);

async function retryable(res: Response): Promise<boolean> {
  if (res.status >= 500) return true;
  if (res.status !== 409) return false;
  const body = (await res
    .clone()
    .json()
    .catch(() => null)) as { code?: string } | null;
  return body?.code === "idempotency_in_progress";
}

class RetryableAnswer extends Error {
  constructor(readonly response: Response) {
    super(`answered ${response.status}`);
  }
}

class RateLimitedAnswer extends Error {
  constructor(
    readonly response: Response,
    readonly waitMs: number,
  ) {
    super(`answered 429, retry after ${waitMs} ms`);
  }
}

/** In ms (delay-seconds or an HTTP-date), or null when it says none. */
function retryAfterMs(value: string | null): number | null {
  const v = value?.trim();
  if (!v) return null;
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP-date has letters (a day and month name); Date.parse would take "1.5" as a date too.
  const at = /[a-z]/i.test(v) ? Date.parse(v) : Number.NaN;
  return Number.isNaN(at) ? null : Math.max(0, at - Date.now());
}

/** By the monotonic clock: a timer may fire a millisecond early, and a retry before the Retry-After is a wasted 429. */
async function sleep(ms: number, signal: AbortSignal): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0; left = until - performance.now()) {
    signal.throwIfAborted();
    // A timer longer than 2^31-1 ms would fire at once: a longer wait takes several.
    const step = Math.min(Math.ceil(left), 2_147_483_647);
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      }, step);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }
  signal.throwIfAborted();
}

/** The typed client: `client.GET("/v1/tasks/{task_id}", { params: { path: { task_id } } })`, typed from the OpenAPI document, plus the helpers below. */
export function createClient(opts: ClientOptions) {
  const retries = opts.retries ?? 4;
  const maxDelay = opts.maxDelayMs ?? 5000;
  const maxRetryAfter = opts.maxRetryAfterMs ?? 60_000;
  const baseFetch = opts.fetch ?? globalThis.fetch;
  const newKey = opts.idempotencyKey ?? (() => crypto.randomUUID());

  // Marked on the way in, where the operation is known.
  const repeatable = new WeakSet<Request>();
  const retryingFetch = (request: Request): Promise<Response> => {
    const mayRepeat = repeatable.has(request);
    return pRetry(
      async (attempt) => {
        // A 429 does not count in p-retry's budget (its wait is the Retry-After), so the bound is kept here.
        const last = attempt > retries;
        let res: Response;
        try {
          res = await baseFetch(request.clone());
        } catch (e) {
          // A network error may have reached the server, so only a repeatable request is retried; a bad URL never is.
          if ((last || !mayRepeat) && e instanceof Error) throw new AbortError(e);
          throw e;
        }
        if (last) return res;
        if (res.status === 429) {
          // Nothing ran, so any method may go again, if the server said when and soon enough.
          const wait = retryAfterMs(res.headers.get("retry-after"));
          if (wait !== null && wait <= maxRetryAfter) throw new RateLimitedAnswer(res, wait);
          return res;
        }
        if (mayRepeat && (await retryable(res))) throw new RetryableAnswer(res);
        return res;
      },
      {
        retries,
        minTimeout: 100,
        maxTimeout: maxDelay,
        randomize: true,
        signal: request.signal,
        onFailedAttempt: async ({ error }) => {
          if (error instanceof RateLimitedAnswer) {
            await error.response.body?.cancel().catch(() => undefined);
            await sleep(error.waitMs, request.signal);
          } else if (error instanceof RetryableAnswer) {
            await error.response.body?.cancel().catch(() => undefined);
            const after = retryAfterMs(error.response.headers.get("retry-after"));
            if (after !== null && after > 0) await sleep(Math.min(after, maxDelay), request.signal);
          }
        },
        // The Retry-After wait replaces the backoff.
        shouldConsumeRetry: ({ error }) => !(error instanceof RateLimitedAnswer),
      },
    );
  };

  const auth: Middleware = {
    onRequest({ request, schemaPath }) {
      request.headers.set("authorization", `Bearer ${opts.token}`);
      const keyed = IDEMPOTENT_OPERATIONS.has(`${request.method} ${schemaPath}`);
      if (keyed && !request.headers.has("idempotency-key")) request.headers.set("idempotency-key", newKey());
      if (keyed || REPEATABLE_METHODS.has(request.method)) repeatable.add(request);
      return request;
    },
  };

  const client: Client<paths> = createFetchClient<paths>({ baseUrl: opts.baseUrl, fetch: retryingFetch });
  client.use(auth);

  /** Every item of a cursor-paginated list: `for await (const task of api.pages("/v1/tasks", { status: "TODO" })) …`. */
  async function* pages<P extends PaginatedPath>(
    path: P,
    query: PageQueryOf<P> = {} as PageQueryOf<P>,
    ...pathParams: PathParamsOf<P> extends Record<string, never> ? [] : [PathParamsOf<P>]
  ): AsyncGenerator<PageItemOf<P>> {
    let after: string | undefined;
    for (;;) {
      const init = { params: { query: { ...query, ...(after === undefined ? {} : { after }) }, path: pathParams[0] ?? {} } };
      // The path is one of the list operations; openapi-fetch's overloads cannot see through the generic.
      const r = await (client.GET as (p: string, i: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>)(path, init);
      const page = unwrap(r) as { data: PageItemOf<P>[]; has_more: boolean; next_cursor: string | null };
      for (const item of page.data) yield item;
      if (!page.has_more || page.next_cursor === null) return;
      after = page.next_cursor;
    }
  }

  /** Every task a search finds, with the same filter, sort and limit on each page: `for await (const task of api.searchAll({ filter })) …`. */
  async function* searchAll(body: SearchAllBody): AsyncGenerator<Schemas["Task"]> {
    let after: string | undefined;
    for (;;) {
      const page = unwrap(await client.POST("/v1/tasks/search", { body: { ...body, ...(after === undefined ? {} : { after }) } }));
      for (const task of page.data) yield task;
      if (!page.has_more || page.next_cursor === null) return;
      after = page.next_cursor;
    }
  }

  /**
   * Any number of task writes, as batches of at most 100 sent in order, each with its own Idempotency-Key; results in the same order.
   * A batch that fails throws a TasksvcError whose `completed` holds the results of the batches before it.
   */
  async function batchTasks(operations: BatchOperation[]): Promise<BatchResult[]> {
    const results: BatchResult[] = [];
    for (let i = 0; i < operations.length; i += BATCH_LIMIT) {
      const r = await client.POST("/v1/tasks/batch", { body: { operations: operations.slice(i, i + BATCH_LIMIT) } });
      try {
        results.push(...unwrap(r).results);
      } catch (e) {
        if (e instanceof TasksvcError) Object.assign(e, { completed: results });
        throw e;
      }
    }
    return results;
  }

  /**
   * Attaches a file: starts an upload, PUTs the bytes to the link it answers (the link is the authorization), registers the file.
   * Every step may be retried safely; an upload never registered is swept when its link expires.
   */
  async function uploadAttachment(taskId: string, file: AttachmentFile, init: { signal?: AbortSignal } = {}): Promise<Schemas["Attachment"]> {
    const bytes = file.data instanceof Blob ? file.data : new Blob([file.data]);
    const meta = { file_name: file.file_name, content_type: file.content_type, size: bytes.size };
    const path = { task_id: taskId };
    const signal = init.signal;
    const ticket = unwrap(await client.POST("/v1/tasks/{task_id}/attachments/uploads", { params: { path }, body: meta, ...(signal ? { signal } : {}) }));
    const put = new Request(ticket.upload_url, { method: "PUT", body: bytes, headers: { "content-type": meta.content_type }, ...(signal ? { signal } : {}) });
    repeatable.add(put);
    const sent = await retryingFetch(put);
    if (sent.ok) await sent.body?.cancel();
    else {
      const problem = (await sent.json().catch(() => ({}))) as Partial<Problem>;
      if (problem.code !== "upload_already_received") throw new TasksvcError(sent.status, problem, sent.headers.get("x-request-id"));
    }
    return unwrap(
      await client.POST("/v1/tasks/{task_id}/attachments", { params: { path }, body: { ...meta, file_key: ticket.file_key }, ...(signal ? { signal } : {}) }),
    );
  }

  /** The live events of `GET /v1/events/stream`, reconnecting with Last-Event-ID: `for await (const e of api.streamEvents({ types: ["task.updated"] })) …`. */
  function streamEvents(options?: EventStreamOptions): AsyncGenerator<Schemas["Event"]> {
    const problemError = (res: Response, problem: Partial<Problem>) =>
      new TasksvcError(res.status, problem, res.headers.get("x-request-id"), res.headers.get("etag"));
    const ctx = { baseUrl: opts.baseUrl, token: opts.token, fetch: baseFetch, maxDelayMs: maxDelay, maxRetryAfterMs: maxRetryAfter };
    return openEventStream({ ...ctx, retryAfterMs, sleep, problemError }, options);
  }

  /**
   * Looks at a job (an export, an import) until it succeeded or failed and answers it then; past the deadline, a JobTimeoutError:
   * `const done = await api.waitForJob("/v1/exports/{export_id}", { export_id: e.id }, { onProgress: (j) => … })`.
   */
  function waitForJob<P extends JobPath>(path: P, params: JobPathParams<P>, options: WaitForJobOptions<JobOf<P>> = {}): Promise<JobOf<P>> {
    const signal = options.signal;
    // The path is one of the job operations; openapi-fetch's overloads cannot see through the generic.
    const get = client.GET as (p: string, i: unknown) => Promise<{ data?: unknown; error?: unknown; response: Response }>;
    const look = async () => unwrap(await get(path, { params: { path: params }, ...(signal ? { signal } : {}) })) as JobOf<P>;
    return pollJob(look, sleep, options);
  }

  return Object.assign(client, { pages, searchAll, batchTasks, uploadAttachment, streamEvents, waitForJob, unwrap });
}

/** The data of a successful answer, or a TasksvcError carrying the problem. */
export function unwrap<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  const problem = (typeof r.error === "object" && r.error !== null ? r.error : {}) as Partial<Problem>;
  throw new TasksvcError(r.response.status, problem, r.response.headers.get("x-request-id"), r.response.headers.get("etag"));
}

type GetPaths = { [P in keyof paths]: paths[P] extends { get: infer O } ? (O extends { responses: unknown } ? P : never) : never }[keyof paths];
type GetOp<P extends keyof paths> = paths[P] extends { get: infer O } ? O : never;
type Ok<P extends keyof paths> = GetOp<P> extends { responses: { 200: { content: { "application/json": infer B } } } } ? B : never;
/** The list operations: their 200 answer is a page (`data`, `has_more`, `next_cursor`). */
export type PaginatedPath = { [P in GetPaths]: Ok<P> extends { data: unknown[]; next_cursor: string | null } ? P : never }[GetPaths];
export type PageItemOf<P extends PaginatedPath> = Ok<P> extends { data: Array<infer I> } ? I : never;
export type PageQueryOf<P extends PaginatedPath> = Omit<GetOp<P> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : Record<string, never>, "after">;

export type PathParamsOf<P extends PaginatedPath> =
  GetOp<P> extends { parameters: { path: infer T } } ? (T extends undefined ? Record<string, never> : NonNullable<T>) : Record<string, never>;

/** The operations that answer a job: their 200 answer has a `status` and a `progress`. */
export type JobPath = { [P in GetPaths]: Ok<P> extends { status: JobStatus; progress: JobLike["progress"] } ? P : never }[GetPaths];
export type JobOf<P extends JobPath> = Ok<P> & JobLike;
export type JobPathParams<P extends JobPath> = GetOp<P> extends { parameters: { path: infer T } } ? NonNullable<T> : never;

/** The body of a search without its cursor: a filter (required); sort and limit may be left out (`-updated_at`, 25). */
export type SearchAllBody = Omit<Schemas["SearchTasksRequest"], "after">;

/** The most operations one POST /v1/tasks/batch takes. */
export const BATCH_LIMIT = 100;
export type BatchOperation = Schemas["BatchTasksRequest"]["operations"][number];
export type BatchResult = Schemas["BatchTasksResponse"]["results"][number];

/** A file for `uploadAttachment`: its name and media type as the attachment will have them, and its bytes. */
export interface AttachmentFile {
  file_name: string;
  content_type: string;
  data: Blob | ArrayBuffer | Uint8Array | string;
}

export type TasksvcClient = ReturnType<typeof createClient>;
