import { randomBytes } from 'node:crypto';
import { deserialize, serialize } from 'node:v8';
import { Queue, QueueEvents, Worker, type Job as BullJob } from 'bullmq';
import { redisConnection, type RedisClient, type RedisTarget } from '../store/redis-connection.js';
import type { ChunkJob, ChunkRunner, JobRecord, TaskOutcome, TaskRunner, TradingTask } from '../trading/tasks.js';

/**
 * The BullMQ adapter of the trading domain's ChunkRunner: a job's chunks go to one BullMQ queue
 * that every hub process sharing the Redis (and the prefix) works on.
 *
 * - The process that took the request adds every chunk to the queue, then claims them for its own
 *   pool first (`queue.remove` succeeds only on a chunk nobody has taken), one per thread at a time:
 *   alone, it runs the whole job on its pool and loses one Redis round trip per chunk.
 * - Every process (the origin too) runs a BullMQ Worker (concurrency = its threads) that takes the
 *   chunks not yet claimed, runs them on its pool and reports progress (`updateProgress`, units)
 *   and the result (v8-serialized, so -0, NaN and Infinity survive) through the queue's events.
 * - A process that dies holding a chunk stops renewing its lock: after `lockMs` the stalled check of
 *   any live worker puts the chunk back in the queue and another process runs it; a chunk that
 *   fails (or stalls too often) is run again on the origin's pool.
 * - Cancel: the origin removes the chunks still waiting and publishes the job id; every process
 *   sets the cancel flag of its chunks of that job (a key also marks it for chunks not yet started).
 * - A large typed array that the chunks of a job share (the trades' P&L of a Monte Carlo job) is
 *   stored once under a key of its own for the job's run, not in every chunk; a process fetches it
 *   once and keeps the last few. The origin's own pool takes the tasks as they are.
 */
export interface QueueOptions {
  /** Where Redis is (a URL, or Sentinels): every connection comes from the Store's connection factory. */
  redis: RedisTarget;
  /** Key prefix of the deployment (REDIS_PREFIX): queues of other deployments on the Redis are apart. */
  prefix: string;
  pool: TaskRunner;
  /** Lock of a running chunk, ms: a dead process's chunk runs elsewhere after about this long. */
  lockMs: number;
  /** Chunks of a grid or a Monte Carlo job, exactly (default: one per MIN_CHUNK_WORK bar evaluations, at least one per local thread, at most 32 or 4 per thread). */
  chunks?: number;
  onError?: (err: unknown) => void;
}

const QUEUE = 'trading-chunks';
/** Least work (bar evaluations) worth a chunk of its own: about 0.1 s of one thread, against ~2 ms per chunk. */
export const MIN_CHUNK_WORK = 2_000_000;
const PROGRESS_MS = 100;
const wakeAll = (run: { waiting: (() => void)[] }) => {
  for (const wake of run.waiting.splice(0)) wake();
};
const encode = (v: unknown) => serialize(v).toString('base64');
const decode = (s: string) => deserialize(Buffer.from(s, 'base64')) as unknown;
/** Typed arrays in a task from this size on are stored once per run (a chunk names them). */
export const SHARED_BYTES = 64 * 1024;
/** Shared arrays a process keeps (each up to tens of MB: the P&L of millions of trades). */
const SHARED_KEPT = 4;
const SHARED_TTL_MS = 3_600_000;
const SHARED = '$shared';
const sharedRef = (v: unknown): string | undefined =>
  v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && typeof (v as Record<string, unknown>)[SHARED] === 'string' ? ((v as Record<string, string>)[SHARED] as string) : undefined;

interface ChunkData {
  job: string;
  run: string;
  index: number;
  task: string;
}
interface ChunkResult {
  units: number;
  /** Encoded value; absent when the chunk was cancelled. */
  value?: string;
}

/** A job's run on the origin: which chunks are settled, and how to settle the rest. */
interface Run {
  job: ChunkJob;
  ids: string[];
  tasks: TradingTask[];
  results: (PromiseSettledResult<TaskOutcome> | undefined)[];
  left: number;
  next: number;
  finish: () => void;
  /** Chunks to run here again (a failed remote chunk). */
  retry: number[];
  /** Lanes waiting for the others' answers. */
  waiting: (() => void)[];
}

export class BullChunkRunner implements ChunkRunner {
  private readonly conn: RedisClient;
  private readonly sub: RedisClient;
  private readonly queue: Queue;
  private readonly events: QueueEvents;
  private readonly worker: Worker;
  private readonly runs = new Map<string, Run>();
  /** Cancel flags of the chunks this process runs for the queue, by job id. */
  private readonly active = new Map<string, Set<Int32Array>>();
  private readonly keyPrefix: string;
  private readonly channel: string;
  private closing = false;
  /** Every connection opened here (BullMQ leaves connections it was given open on close). */
  private readonly clients: RedisClient[] = [];
  private readonly requestChannel: string;
  private onRequest: ((jobId: string) => void) | undefined;
  /** `chunks`: of the last job started here. */
  private readonly counts = { chunks: 0, claimed: 0, served: 0, serving: 0, rerun: 0 };
  /** Shared arrays fetched here, by key, oldest first. */
  private readonly shared = new Map<string, Promise<unknown>>();
  private readonly sharedPrefix: string;
  /** BullMQ's key prefix (a hash tag on a cluster). */
  readonly bullPrefix: string;

  constructor(private readonly opts: QueueOptions) {
    // on a Redis Cluster every key of the queue must share a slot (BullMQ's scripts touch several):
    // the prefix is a hash tag there; on one Redis it stays as it was (jobs in flight keep their keys)
    const bull = opts.redis.cluster?.length ? `{${opts.prefix}bull}` : `${opts.prefix}bull`;
    this.bullPrefix = bull;
    this.keyPrefix = `${opts.prefix}trading:cancelled:`;
    this.channel = `${opts.prefix}trading:cancel`;
    this.requestChannel = `${opts.prefix}trading:cancel-request`;
    this.sharedPrefix = `${opts.prefix}trading:shared:`;
    // blocking connections (worker, events, subscriber) wait for Redis; the queue's commands fail
    // fast, so a job falls back to this process's pool when Redis is out of reach
    const redis = () => {
      const c = redisConnection(opts.redis, 'blocking');
      this.clients.push(c);
      return c;
    };
    this.conn = redisConnection(opts.redis, 'queue');
    this.sub = redis();
    const onError = (err: unknown) => opts.onError?.(err);
    this.queue = new Queue(QUEUE, { connection: this.conn, prefix: bull });
    this.events = new QueueEvents(QUEUE, { connection: redis(), prefix: bull });
    this.worker = new Worker(QUEUE, (job, _token, signal) => this.process(job as BullJob<ChunkData, ChunkResult>, signal), {
      connection: redis(),
      prefix: bull,
      concurrency: opts.pool.threads,
      lockDuration: opts.lockMs,
      stalledInterval: Math.max(1000, Math.floor(opts.lockMs / 2)),
      maxStalledCount: 3,
    });
    for (const e of [this.queue, this.events, this.worker, this.conn, this.sub]) (e as { on(ev: 'error', f: (err: unknown) => void): void }).on('error', onError);
    this.events.on('progress', ({ jobId, data }) => {
      const r = this.remote(jobId);
      if (r && !r.run.results[r.index]) r.run.job.remoteProgress(r.index, Number(data) || 0);
    });
    this.events.on('completed', ({ jobId, returnvalue }) => this.completed(jobId, returnvalue as unknown));
    this.events.on('failed', ({ jobId }) => this.failed(jobId));
    this.sub.on('message', (ch: string, jobId: string) => (ch === this.channel ? this.stopLocal(jobId) : this.onRequest?.(jobId)));
  }

  /** Waits until the queue's connections are up. */
  async start(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), this.events.waitUntilReady(), this.worker.waitUntilReady(), this.sub.subscribe(this.channel, this.requestChannel)]);
  }

  async run(job: ChunkJob, tasks: TradingTask[]): Promise<PromiseSettledResult<TaskOutcome>[]> {
    const runId = randomBytes(6).toString('hex');
    const ids = tasks.map((_, i) => `c-${runId}-${i}`);
    this.counts.chunks = tasks.length;
    const done = new Promise<void>((finish) => {
      const run: Run = { job, ids, tasks, results: tasks.map(() => undefined), left: tasks.length, next: 0, finish, retry: [], waiting: [] };
      this.runs.set(runId, run);
    });
    const run = this.runs.get(runId)!;
    job.onCancel(() => void this.cancelRun(run));
    const sharedKeys: string[] = [];
    try {
      try {
        const wire = await this.encodeTasks(runId, tasks, sharedKeys);
        await this.queue.addBulk(
          tasks.map((_, index) => ({
            name: job.id,
            data: { job: job.id, run: runId, index, task: wire[index]! } satisfies ChunkData,
            opts: { jobId: ids[index], removeOnComplete: true, removeOnFail: true, attempts: 1 },
          })),
        );
      } catch (err) {
        // the queue is out of reach: the job runs on this process alone
        this.opts.onError?.(err);
        return await Promise.allSettled(tasks.map((t) => this.opts.pool.run({ ...t, ctl: job.ctl })));
      }
      if (job.cancelled) await this.cancelRun(run);
      await Promise.all(Array.from({ length: this.opts.pool.threads }, () => this.lane(run)));
      await done;
      return run.results as PromiseSettledResult<TaskOutcome>[];
    } finally {
      this.runs.delete(runId);
      // one DEL per key: on a cluster the keys of a run lie in different slots
      if (sharedKeys.length) await Promise.all(sharedKeys.map((k) => this.conn.del(k))).catch((err) => this.opts.onError?.(err));
    }
  }

  /**
   * The tasks of a run as the queue carries them: a typed array of SHARED_BYTES or more is stored
   * once (its key in `keys`) and each task names it.
   */
  private async encodeTasks(runId: string, tasks: TradingTask[], keys: string[]): Promise<string[]> {
    const stored = new Map<ArrayBufferView, string>();
    const wire = tasks.map((t) => {
      const out: Record<string, unknown> = { ...t };
      for (const [field, v] of Object.entries(t)) {
        if (!ArrayBuffer.isView(v) || v.byteLength < SHARED_BYTES) continue;
        let key = stored.get(v);
        if (!key) stored.set(v, (key = `${this.sharedPrefix}${runId}:${stored.size}`));
        out[field] = { [SHARED]: key };
      }
      return encode(out);
    });
    for (const [v, key] of stored) {
      keys.push(key);
      await this.conn.set(key, serialize(v), 'PX', SHARED_TTL_MS);
    }
    return wire;
  }

  /** A task from the queue, with its shared arrays (fetched once per process). */
  private async decodeTask(raw: string): Promise<TradingTask> {
    const task = decode(raw) as Record<string, unknown>;
    for (const [field, v] of Object.entries(task)) {
      const key = sharedRef(v);
      if (key === undefined) continue;
      let value = this.shared.get(key);
      if (!value) {
        value = this.conn.getBuffer(key).then((b) => {
          if (!b) throw new Error(`${key} is gone (its job ended)`);
          return deserialize(b) as unknown;
        });
        value.catch(() => this.shared.delete(key));
        this.shared.set(key, value);
        for (const old of this.shared.keys()) if (this.shared.size > SHARED_KEPT) this.shared.delete(old);
      }
      task[field] = await value;
    }
    return task as unknown as TradingTask;
  }

  /** One local thread's share: claim the next chunk nobody took and run it here; then wait for the rest. */
  private async lane(run: Run): Promise<void> {
    for (;;) {
      if (run.left === 0) return;
      const retry = run.retry.shift();
      const i = retry ?? (run.next < run.ids.length ? run.next++ : undefined);
      if (i === undefined) {
        // everything is claimed: wait for the others' answers, or a failed chunk to run again
        await new Promise<void>((wake) => run.waiting.push(wake));
        continue;
      }
      if (run.results[i] || run.job.cancelled) continue;
      // a failed chunk has left the queue (removeOnFail): it is this lane's without a claim
      if (retry === undefined) {
        // a chunk already done elsewhere is gone (removeOnComplete), and remove() would report it removed
        // (Redis out of reach: the chunk runs here; a second run elsewhere gives the same result)
        if (!(await this.conn.exists(this.jobKey(run.ids[i]!)).catch(() => 1))) continue;
        const claimed = await this.queue.remove(run.ids[i]!).catch(() => 1);
        if (claimed !== 1 || run.results[i]) continue;
      }
      this.counts.claimed++;
      try {
        this.settle(run, i, { status: 'fulfilled', value: await this.opts.pool.run({ ...run.tasks[i]!, ctl: run.job.ctl }) });
      } catch (reason) {
        this.settle(run, i, { status: 'rejected', reason });
      }
    }
  }

  private settle(run: Run, i: number, r: PromiseSettledResult<TaskOutcome>): void {
    if (run.results[i]) return;
    run.results[i] = r;
    if (--run.left === 0) run.finish();
    wakeAll(run);
  }

  private recordKey(jobId: string): string {
    return `${this.opts.prefix}trading:job:${jobId}`;
  }

  async announce(jobId: string, record: JobRecord, ttlMs: number): Promise<void> {
    await this.conn.set(this.recordKey(jobId), JSON.stringify(record), 'PX', ttlMs).catch((err) => this.opts.onError?.(err));
  }

  async forget(jobId: string): Promise<void> {
    await this.conn.del(this.recordKey(jobId)).catch((err) => this.opts.onError?.(err));
  }

  async lookup(jobId: string): Promise<JobRecord | undefined> {
    const raw = await this.conn.get(this.recordKey(jobId));
    return raw ? (JSON.parse(raw) as JobRecord) : undefined;
  }

  async requestCancel(jobId: string): Promise<void> {
    await this.conn.publish(this.requestChannel, jobId);
  }

  onCancelRequest(fn: (jobId: string) => void): void {
    this.onRequest = fn;
  }

  private jobKey(chunkId: string): string {
    return `${this.bullPrefix}:${QUEUE}:${chunkId}`;
  }

  private remote(chunkId: string): { run: Run; index: number } | undefined {
    const m = /^c-([0-9a-f]+)-(\d+)$/.exec(chunkId);
    const run = m ? this.runs.get(m[1]!) : undefined;
    return run ? { run, index: Number(m![2]) } : undefined;
  }

  private completed(chunkId: string, raw: unknown): void {
    const r = this.remote(chunkId);
    if (!r || r.run.results[r.index]) return;
    const out = (typeof raw === 'string' ? JSON.parse(raw) : raw) as ChunkResult;
    r.run.job.remoteProgress(r.index, out.units);
    this.settle(r.run, r.index, { status: 'fulfilled', value: out.value === undefined ? { ok: false, cancelled: true } : { ok: true, value: decode(out.value) } });
  }

  /** A chunk that failed elsewhere (or stalled too often) runs again here. */
  private failed(chunkId: string): void {
    const r = this.remote(chunkId);
    if (!r || r.run.results[r.index]) return;
    r.run.job.remoteProgress(r.index, 0);
    r.run.retry.push(r.index);
    this.counts.rerun++;
    wakeAll(r.run);
  }

  /** Cancel of a job started here: waiting chunks leave the queue, running ones elsewhere are told. */
  private async cancelRun(run: Run): Promise<void> {
    try {
      await this.conn.set(this.keyPrefix + run.job.id, '1', 'PX', 3_600_000);
      await this.conn.publish(this.channel, run.job.id);
    } catch (err) {
      this.opts.onError?.(err);
    }
    await Promise.all(run.ids.map((id, i) => (run.results[i] ? undefined : this.queue.remove(id).catch(() => 0))));
    // chunks run here stop at their next unit; those elsewhere are not waited for
    for (let i = 0; i < run.ids.length; i++) {
      if (!run.results[i]) this.settle(run, i, { status: 'fulfilled', value: { ok: false, cancelled: true } });
    }
  }

  private stopLocal(jobId: string): void {
    for (const ctl of this.active.get(jobId) ?? []) Atomics.store(ctl, 0, 1);
  }

  /** The Worker's processor: a chunk of any process's job, run on this process's pool. */
  private async process(bj: BullJob<ChunkData, ChunkResult>, signal?: AbortSignal): Promise<ChunkResult> {
    const { job, task } = bj.data;
    if (await this.conn.exists(this.keyPrefix + job)) return { units: 0 };
    const ctl = new Int32Array(new SharedArrayBuffer(8));
    const set = this.active.get(job) ?? new Set<Int32Array>();
    this.active.set(job, set.add(ctl));
    const stop = () => Atomics.store(ctl, 0, 1);
    signal?.addEventListener('abort', stop, { once: true });
    let last = 0;
    this.counts.serving++;
    const timer = setInterval(() => {
      const units = Atomics.load(ctl, 1);
      if (units !== last) void bj.updateProgress((last = units)).catch(() => undefined);
    }, PROGRESS_MS);
    try {
      const out = await this.opts.pool.run({ ...(await this.decodeTask(task)), ctl });
      const units = Atomics.load(ctl, 1);
      if (out.ok) {
        this.counts.served++;
        return { units, value: encode(out.value) };
      }
      // stopped because this process stops, not because the job was cancelled: the chunk fails, and
      // its origin runs it again
      if (this.closing) throw new Error('the process working on this chunk stopped');
      return { units };
    } finally {
      clearInterval(timer);
      this.counts.serving--;
      signal?.removeEventListener('abort', stop);
      set.delete(ctl);
      if (set.size === 0) this.active.delete(job);
    }
  }

  chunksFor(items: number, work: number): number {
    const threads = this.opts.pool.threads;
    const want = this.opts.chunks ?? Math.min(Math.max(32, threads * 4), Math.max(threads, Math.ceil(work / MIN_CHUNK_WORK)));
    return Math.max(1, Math.min(items, want));
  }

  stats() {
    return { ...this.counts };
  }

  async close(): Promise<void> {
    this.closing = true;
    for (const run of this.runs.values()) void this.cancelRun(run);
    for (const set of this.active.values()) for (const ctl of set) Atomics.store(ctl, 0, 1);
    await this.worker.close().catch(() => undefined);
    await Promise.all([this.events.close(), this.queue.close()].map((p) => p.catch(() => undefined)));
    this.conn.disconnect();
    for (const c of this.clients) c.disconnect();
  }
}
