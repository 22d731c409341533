import { randomBytes } from 'node:crypto';
import { conflict, notFound } from '../errors.js';

/**
 * Long jobs (backtest, compare, optimize, walk-forward, Monte Carlo). A job has a client-chosen or
 * generated id; while it runs its progress `{job, done, total, state}` is published on topic
 * `job:<id>` (at most every PROGRESS_MS, plus a first and a last message); POST
 * /api/program/jobs/:id/cancel sets its cancel flag, the workers stop at the next unit, and the
 * running request answers 409 `cancelled`.
 */
export const JOB_TOPIC_PREFIX = 'job:';
export const PROGRESS_MS = 100;
export type JobState = 'running' | 'done' | 'cancelled' | 'failed';

export interface JobProgress {
  job: string;
  done: number;
  total: number;
  state: JobState;
}

export class Job {
  /** [0] cancel flag, [1] units done: shared with the workers. */
  readonly ctl = new Int32Array(new SharedArrayBuffer(8));
  private timer: NodeJS.Timeout | undefined;
  private lastDone = -1;

  constructor(
    readonly id: string,
    readonly kind: string,
    readonly total: number,
    private readonly publish: (p: JobProgress) => void,
  ) {}

  get cancelled(): boolean {
    return Atomics.load(this.ctl, 0) !== 0;
  }

  get done(): number {
    return Math.min(this.total, Atomics.load(this.ctl, 1));
  }

  cancel(): void {
    Atomics.store(this.ctl, 0, 1);
  }

  start(): void {
    this.report('running');
    this.timer = setInterval(() => {
      if (this.done !== this.lastDone) this.report('running');
    }, PROGRESS_MS);
    this.timer.unref();
  }

  end(state: Exclude<JobState, 'running'>): void {
    clearInterval(this.timer);
    this.report(state);
  }

  private report(state: JobState): void {
    const done = state === 'done' ? this.total : this.done;
    this.lastDone = done;
    this.publish({ job: this.id, done, total: this.total, state });
  }
}

export class Jobs {
  private readonly running = new Map<string, Job>();

  constructor(private readonly publish: (topic: string, p: JobProgress) => void) {}

  /** Starts a job; a running job with the same id is a 409 `job_running`. */
  open(id: string | undefined, kind: string, total: number): Job {
    const jobId = id ?? randomBytes(8).toString('hex');
    if (this.running.has(jobId)) throw conflict('job_running', `job ${jobId} is already running`, { job: jobId });
    const job = new Job(jobId, kind, total, (p) => this.publish(JOB_TOPIC_PREFIX + jobId, p));
    this.running.set(jobId, job);
    job.start();
    return job;
  }

  close(job: Job, state: Exclude<JobState, 'running'>): void {
    this.running.delete(job.id);
    job.end(state);
  }

  /** Cancels a running job; 404 `job_not_found` when none runs under that id. */
  cancel(id: string): { job: string; kind: string; done: number; total: number; state: 'cancelling' } {
    const job = this.running.get(id);
    if (!job) throw notFound('job_not_found', `no running job ${id}`, { job: id });
    job.cancel();
    return { job: id, kind: job.kind, done: job.done, total: job.total, state: 'cancelling' };
  }

  list(): { job: string; kind: string; done: number; total: number }[] {
    return [...this.running.values()].map((j) => ({ job: j.id, kind: j.kind, done: j.done, total: j.total }));
  }

  cancelAll(): void {
    for (const j of this.running.values()) j.cancel();
  }
}
