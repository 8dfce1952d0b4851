/** Every job of the API (an export, an import) goes through these; `succeeded` and `failed` are final. */
export type JobStatus = "queued" | "running" | "succeeded" | "failed";

/** What every job's answer has: how far it is. */
export interface JobLike {
  id: string;
  status: JobStatus;
  progress: { done: number; total: number };
}

export interface WaitForJobOptions<J extends JobLike = JobLike> {
  /** Longest wait in all before a JobTimeoutError (default 10 minutes). */
  timeoutMs?: number;
  /** First wait between two looks (default 500 ms); each wait is half as long again, up to `maxIntervalMs`. */
  intervalMs?: number;
  /** Longest wait between two looks (default 5 s). */
  maxIntervalMs?: number;
  /** Stops waiting (the job goes on). */
  signal?: AbortSignal;
  /** Each look at the job, for a progress bar. */
  onProgress?: (job: J) => void;
}

/** The job was still queued or running at the deadline; it goes on, and `job` is how it stood last. */
export class JobTimeoutError<J extends JobLike = JobLike> extends Error {
  readonly job: J;
  constructor(job: J, timeoutMs: number) {
    super(`job ${job.id} was still ${job.status} (${job.progress.done} of ${job.progress.total}) after ${timeoutMs} ms`);
    this.name = "JobTimeoutError";
    this.job = job;
  }
}

export const isFinal = (status: JobStatus) => status === "succeeded" || status === "failed";

/** Looks at a job until it succeeded or failed, and answers it as it stands then (a failed one carries its `error`). */
export async function pollJob<J extends JobLike>(
  look: () => Promise<J>,
  sleep: (ms: number, signal: AbortSignal) => Promise<void>,
  opts: WaitForJobOptions<J> = {},
): Promise<J> {
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const deadline = performance.now() + timeoutMs;
  const signal = opts.signal ?? new AbortController().signal;
  let interval = Math.max(1, opts.intervalMs ?? 500);
  const maxInterval = Math.max(interval, opts.maxIntervalMs ?? 5000);
  for (;;) {
    signal.throwIfAborted();
    const job = await look();
    opts.onProgress?.(job);
    if (isFinal(job.status)) return job;
    const left = deadline - performance.now();
    if (left <= 0) throw new JobTimeoutError(job, timeoutMs);
    await sleep(Math.min(interval, left), signal);
    interval = Math.min(maxInterval, interval * 1.5);
  }
}
