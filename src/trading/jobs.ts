import { randomBytes } from 'node:crypto';
import { AppError, conflict, notFound } from '../errors.js';

/**
 * Long jobs (backtest, compare, optimize, walk-forward, Monte Carlo) and their bounds
 * (docs/trading.md "Jobs"). A job has a client-chosen or generated id; while it runs its progress
 * `{job, done, total, state}` is published on topic `job:<id>` (at most every PROGRESS_MS, plus a
 * first and a last message).
 *
 * Admission: at most `queue` jobs are admitted at once (running or waiting; beyond: 503
 * `queue_full`), at most `perClient` of them for one client (beyond: 429 `too_many_jobs`), both
 * with Retry-After. At most `running` jobs run on the worker pool at once; the others wait in
 * arrival order. A job is cancelled by POST /api/program/jobs/:id/cancel, by its client going away
 * before the answer (`abandoned`), or by running past `timeoutMs` (`timeout`): a waiting job leaves
 * the queue at once, a running one stops at the workers' next unit of work.
 */
export const JOB_TOPIC_PREFIX = 'job:';
export const PROGRESS_MS = 100;
/** How long, and how many, ended jobs are remembered (their topics stay known). */
export const ENDED_KEPT_MS = 60_000;
const ENDED_KEPT_MAX = 1024;
/** Seconds a refused client is told to wait (Retry-After). */
export const JOB_RETRY_AFTER_S = 2;
export type JobState = 'queued' | 'running' | 'done' | 'cancelled' | 'failed';
export type CancelReason = 'cancelled' | 'abandoned' | 'timeout';

export interface JobProgress {
  job: string;
  done: number;
  total: number;
  state: JobState;
}

export interface JobLimits {
  /** Jobs running on the pool at once. */
  running: number;
  /** Jobs admitted at once (running and waiting). */
  queue: number;
  /** Jobs one client may have admitted at once. */
  perClient: number;
  /** Longest a job may run, ms. */
  timeoutMs: number;
}

export class Job {
  /** [0] cancel flag, [1] units done: shared with the workers. */
  readonly ctl = new Int32Array(new SharedArrayBuffer(8));
  state: 'queued' | 'running' = 'queued';
  /** Why it was cancelled (undefined while it was not). */
  reason: CancelReason | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastDone = -1;
  /** Units done by other processes, by chunk (jobs spread over a queue). */
  readonly remote = new Map<number, number>();
  /** Called once when the job is cancelled (a spread job tells the other processes). */
  readonly cancelHooks: (() => void)[] = [];
  /** Called when a waiting job is cancelled (it leaves the queue). */
  onCancel: (() => void) | undefined;

  constructor(
    readonly id: string,
    readonly kind: string,
    readonly total: number,
    readonly client: string,
    private readonly publish: (p: JobProgress) => void,
  ) {}

  get cancelled(): boolean {
    return Atomics.load(this.ctl, 0) !== 0;
  }

  get done(): number {
    let remote = 0;
    for (const n of this.remote.values()) remote += n;
    return Math.min(this.total, Atomics.load(this.ctl, 1) + remote);
  }

  cancel(reason: CancelReason = 'cancelled'): void {
    if (this.cancelled) return;
    this.reason = reason;
    Atomics.store(this.ctl, 0, 1);
    this.onCancel?.();
    for (const hook of this.cancelHooks.splice(0)) hook();
  }

  start(): void {
    this.state = 'running';
    this.report('running');
    this.timer = setInterval(() => {
      if (this.done !== this.lastDone) this.report('running');
    }, PROGRESS_MS);
    this.timer.unref();
  }

  end(state: Exclude<JobState, 'running' | 'queued'>): void {
    clearInterval(this.timer);
    this.report(state);
  }

  private report(state: JobState): void {
    const done = state === 'done' ? this.total : this.done;
    this.lastDone = done;
    this.publish({ job: this.id, done, total: this.total, state });
  }
}

/** The error a cancelled job answers with: 409 `cancelled`, or 503 `job_timeout` past its time budget. */
export function cancelledError(job: Job, timeoutMs: number): AppError {
  if (job.reason === 'timeout') {
    return new AppError('unavailable', 'job_timeout', `job ${job.id} ran past its ${timeoutMs} ms budget and was stopped`, { job: job.id, budget_ms: timeoutMs, done: job.done, total: job.total });
  }
  return conflict('cancelled', `job ${job.id} was cancelled`, { job: job.id, done: job.done, total: job.total, reason: job.reason ?? 'cancelled' });
}

export class Jobs {
  private readonly admitted = new Map<string, Job>();
  /** Ended jobs' ids and until when they are remembered, oldest first (bounded). */
  private readonly ended = new Map<string, number>();
  private readonly waiting: { job: Job; go: () => void }[] = [];
  private runningCount = 0;
  /** Jobs cancelled since start, by reason (for /api/program/jobs and tests). */
  readonly cancelledBy: Record<CancelReason, number> = { cancelled: 0, abandoned: 0, timeout: 0 };

  constructor(
    private readonly publish: (topic: string, p: JobProgress) => void,
    readonly limits: JobLimits,
  ) {}

  /**
   * Admits a job for `client`: a job with the same id already admitted is a 409 `job_running`, a
   * full queue a 503 `queue_full`, a client at its limit a 429 `too_many_jobs`.
   */
  open(id: string | undefined, kind: string, total: number, client = 'internal'): Job {
    const jobId = id ?? randomBytes(8).toString('hex');
    if (this.admitted.has(jobId)) throw conflict('job_running', `job ${jobId} is already running`, { job: jobId });
    const { queue, perClient } = this.limits;
    if (this.admitted.size >= queue) {
      throw new AppError('unavailable', 'queue_full', `${this.admitted.size} jobs are admitted, at most ${queue}; retry later`, { limit: queue, retry_after_s: JOB_RETRY_AFTER_S });
    }
    let mine = 0;
    for (const j of this.admitted.values()) if (j.client === client) mine++;
    if (mine >= perClient) {
      throw new AppError('rate_limited', 'too_many_jobs', `${mine} of your jobs are admitted, at most ${perClient}; wait for one to finish`, { limit: perClient, retry_after_s: JOB_RETRY_AFTER_S });
    }
    const job = new Job(jobId, kind, total, client, (p) => this.publish(JOB_TOPIC_PREFIX + jobId, p));
    this.admitted.set(jobId, job);
    return job;
  }

  /**
   * Waits for a running slot (cancellation while waiting rejects at once), runs `fn` under the time
   * budget, and gives the slot back. `signal`: the client's connection; its end cancels the job.
   */
  async run<T>(job: Job, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const abandon = () => this.cancel(job.id, 'abandoned', false);
    if (signal?.aborted) abandon();
    signal?.addEventListener('abort', abandon, { once: true });
    let timer: NodeJS.Timeout | undefined;
    try {
      if (job.cancelled) throw cancelledError(job, this.limits.timeoutMs);
      if (this.runningCount >= this.limits.running) {
        await new Promise<void>((go, stop) => {
          const entry = { job, go };
          this.waiting.push(entry);
          job.onCancel = () => {
            const i = this.waiting.indexOf(entry);
            if (i >= 0) this.waiting.splice(i, 1);
            stop(cancelledError(job, this.limits.timeoutMs));
          };
        });
      } else this.runningCount++;
      job.onCancel = undefined;
      job.start();
      timer = setTimeout(() => this.cancel(job.id, 'timeout', false), this.limits.timeoutMs);
      timer.unref();
      try {
        return await fn();
      } finally {
        this.next();
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', abandon);
      this.admitted.delete(job.id);
    }
  }

  /** Hands the running slot of a finished job to the next waiting one. */
  private next(): void {
    const w = this.waiting.shift();
    if (w) w.go();
    else this.runningCount--;
  }

  close(job: Job, state: 'done' | 'cancelled' | 'failed'): void {
    job.end(state);
    // remembered a while, so a subscription that arrives after a quick job still finds its topic
    this.ended.delete(job.id);
    this.ended.set(job.id, Date.now() + ENDED_KEPT_MS);
    for (const [id, until] of this.ended) {
      if (this.ended.size <= ENDED_KEPT_MAX && until > Date.now()) break;
      this.ended.delete(id);
    }
  }

  /** The admitted job under `id`, if any. */
  get(id: string): Job | undefined {
    return this.admitted.get(id);
  }

  /** Whether a job under `id` is admitted here or ended here within ENDED_KEPT_MS. */
  known(id: string): boolean {
    return this.admitted.has(id) || (this.ended.get(id) ?? 0) > Date.now();
  }

  /** Cancels an admitted job; 404 `job_not_found` when none is admitted under that id. */
  cancel(id: string, reason: CancelReason = 'cancelled', strict = true) {
    const job = this.admitted.get(id);
    if (!job) {
      if (strict) throw notFound('job_not_found', `no running job ${id}`, { job: id });
      return undefined;
    }
    if (!job.cancelled) this.cancelledBy[reason]++;
    const was = job.state;
    job.cancel(reason);
    if (was === 'queued') this.admitted.delete(id);
    return { job: id, kind: job.kind, done: job.done, total: job.total, state: 'cancelling' as const };
  }

  list(): { job: string; kind: string; state: 'queued' | 'running'; done: number; total: number }[] {
    return [...this.admitted.values()].map((j) => ({ job: j.id, kind: j.kind, state: j.state, done: j.done, total: j.total }));
  }

  /** What the bounds look like now. */
  stats() {
    return { admitted: this.admitted.size, running: this.runningCount, waiting: this.waiting.length, limits: this.limits, cancelled: { ...this.cancelledBy } };
  }

  cancelAll(): void {
    for (const j of [...this.admitted.values()]) this.cancel(j.id, 'cancelled', false);
  }
}
