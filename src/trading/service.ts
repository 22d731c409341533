import type { Bus } from '../bus.js';
import { AppError, forbidden, notFound } from '../errors.js';
import type { ChunkJob, ChunkRunner, TaskOutcome, TaskRunner, TradingTask } from './tasks.js';
import {
  objectiveValue,
  rankKey,
  statOf,
  type GridRow,
  type OptimizeObjective,
  summarizeWalkForward,
  walkForwardWindows,
  type Objective,
  type WindowResult,
} from './analyses.js';
import { monteCarloSummary, type MonteCarloRuns } from './monte-carlo.js';
import { specJson, type CandleSpec } from './candles.js';
import type { Settings } from './engine.js';
import { cancelledError, Jobs, type Job, type JobLimits, type JobProgress } from './jobs.js';
import type { Metrics } from './metrics.js';
import type { SearchSpec } from './search.js';
import { expandGrid, type StrategyId } from './strategies.js';

export { JOB_TOPIC_PREFIX } from './jobs.js';

/** Who asks to cancel a job: the client key of a signed-in identity, and whether it is an operator. */
export interface JobCanceller {
  client: string;
  operator: boolean;
}

/** Who asked for a job: the client it counts against, and its connection (closing it cancels the job). */
export interface JobOrigin {
  client?: string;
  signal?: AbortSignal;
}


interface Base {
  job_id?: string;
  candles: CandleSpec;
  settings: Settings;
}
export interface BacktestInput extends Base {
  strategy: StrategyId;
  params: Record<string, number>;
  equity_points: number;
  trades_limit: number;
}
export interface CompareInput extends Base {
  entries: { strategy: StrategyId; params: Record<string, number> }[];
  equity_points: number;
  objective: Objective;
}
export interface GridInput extends Base {
  strategy: StrategyId;
  grid?: Record<string, number[]>;
  params: Record<string, number>;
  objective: Objective;
}
export interface OptimizeInput extends Omit<GridInput, 'objective'> {
  objective: OptimizeObjective;
  /** The constraint's text (already applied to `combos`), for the answer. */
  constraint?: string | null;
  search?: SearchSpec;
  heatmap?: [string, string] | null;
  /** The combinations to run (the route's search); without them, the whole grid. */
  combos?: Record<string, number>[];
  asked?: number;
  skipped?: number;
  constrained?: number;
}
export interface WalkForwardInput extends GridInput {
  in_sample: number;
  out_of_sample: number;
  step: number;
}
export interface MonteCarloInput extends Base {
  strategy: StrategyId;
  params: Record<string, number>;
  runs: number;
  mc_seed: number;
  ruin_drawdown: number;
}

/** Runs a step of a job's tasks (`local`: on this process's pool, not through the queue). */
type Step = (tasks: TradingTask[], opts?: { local?: boolean }) => Promise<unknown[]>;

/** Summary columns of a grid row (every row of an optimization). */
const SUMMARY = ['trades', 'win_rate', 'profit_factor', 'net_profit', 'sharpe', 'max_drawdown', 'sqn'] as const;
const summary = (m: Metrics) => Object.fromEntries(SUMMARY.map((k) => [k, m[k]]));

/**
 * The trading analyses service: splits work into worker tasks, tracks the job (progress on the bus,
 * cancel) and assembles results. Knows no sockets.
 */
export class TradingService {
  readonly jobs: Jobs;

  constructor(
    private readonly opts: {
      pool: TaskRunner;
      /** Spreads grid, walk-forward and Monte Carlo chunks over every process sharing a queue (with REDIS_URL). */
      spread?: ChunkRunner;
      bus: Pick<Bus, 'emit'>;
      /** Bounds (docs/trading.md "Jobs"); default: the pool's threads run, 32 admitted, 2 per client, 120 s. */
      limits?: Partial<JobLimits>;
    },
  ) {
    this.jobs = new Jobs(
      (topic, p: JobProgress) => opts.bus.emit(topic, p as never),
      { running: opts.pool.threads, queue: 32, perClient: 2, timeoutMs: 120_000, ...opts.limits },
    );
    opts.spread?.onCancelRequest((id) => void this.jobs.cancel(id, 'cancelled', false));
  }

  /** With a queue: this process's chunk counts (`queue`), for GET /api/program/jobs. */
  queueStats() {
    return this.opts.spread ? { queue: this.opts.spread.stats() } : {};
  }

  /**
   * Whether a job is admitted under `id` (or ended here a moment ago) on this process or, unless
   * `localOnly`, on another (with a queue: a store read).
   */
  async jobKnown(id: string, localOnly = false): Promise<boolean> {
    return this.jobs.known(id) || (!localOnly && !!(await this.opts.spread?.lookup(id)));
  }

  /**
   * Cancels a job for `by`: a job belongs to whoever started it (its client, `id:<identity>`), and an
   * operator may cancel any. No such job: 404 `job_not_found`; someone else's: 403 `forbidden`.
   */
  async cancel(id: string, by: JobCanceller) {
    const job = this.jobs.get(id);
    if (job) {
      if (!by.operator && job.client !== by.client) throw forbidden(`job ${id} belongs to another client`, { job: id });
      return this.jobs.cancel(id)!;
    }
    // with a queue, the job may run on another process: its record names the owner
    const record = await this.opts.spread?.lookup(id);
    if (!record) throw notFound('job_not_found', `no running job ${id}`, { job: id });
    if (!by.operator && record.client !== by.client) throw forbidden(`job ${id} belongs to another client`, { job: id });
    await this.opts.spread!.requestCancel(id);
    return { job: id, kind: record.kind, done: 0, total: record.total, state: 'cancelling' as const };
  }

  /**
   * Runs tasks on the pool under a job once it gets a running slot: waits for all of them, then
   * 409 `cancelled` (503 `job_timeout` past its budget) if the job was cancelled.
   */
  private runTasks(job: Job, tasks: TradingTask[], signal: AbortSignal | undefined): Promise<unknown[]> {
    return this.runJob(job, signal, (step) => step(tasks));
  }

  /**
   * Runs a job once it gets a running slot: `body` runs its tasks in steps (`step` waits for all of
   * a step's tasks and gives their values in task order; a job of several steps, Monte Carlo, uses
   * the values of one to make the next). Optimize, walk-forward and Monte Carlo steps go through
   * the queue when there is one (`spread`, unless told not to). A cancelled job answers 409
   * `cancelled` (503 `job_timeout` past its budget) once its step's tasks have stopped.
   */
  private async runJob<R>(job: Job, signal: AbortSignal | undefined, body: (step: Step) => Promise<R>): Promise<R> {
    const spread = this.opts.spread;
    /** How a step ended the job early: cancelled, or a task that failed. */
    const halt: { cancelled?: true; failed?: PromiseRejectedResult } = {};
    const step: Step = async (tasks, opts = {}) => {
      // a data set's bars are shared memory of this process: its tasks run on this process's pool
      const onData = tasks.some((t) => 'candles' in t && t.candles.data);
      const queued = spread && !opts.local && !onData && job.kind !== 'backtest' && job.kind !== 'compare';
      const outcomes = await (queued ? spread.run(chunkJob(job), tasks) : Promise.allSettled(tasks.map((t) => this.opts.pool.run({ ...t, ctl: job.ctl }))));
      if (job.cancelled || outcomes.some((o) => o.status === 'fulfilled' && !o.value.ok)) halt.cancelled = true;
      else halt.failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (halt.cancelled || halt.failed) throw new Error('the job stopped');
      return outcomes.map((o) => ((o as PromiseFulfilledResult<TaskOutcome>).value as { value: unknown }).value);
    };
    await spread?.announce(job.id, { client: job.client, kind: job.kind, total: job.total }, this.jobs.limits.timeoutMs * 2 + 60_000);
    let result: { value: R } | { error: unknown };
    try {
      result = { value: await this.jobs.run(job, () => body(step), signal) };
    } catch (error) {
      result = { error };
    } finally {
      await spread?.forget(job.id);
    }
    if ('value' in result) {
      this.jobs.close(job, 'done');
      return result.value;
    }
    if (halt.cancelled) {
      this.jobs.close(job, 'cancelled');
      throw cancelledError(job, this.jobs.limits.timeoutMs);
    }
    if (halt.failed) {
      this.jobs.close(job, 'failed');
      throw new AppError('internal', 'job_failed', 'the job failed', { job: job.id, reason: String(halt.failed.reason?.message ?? halt.failed) });
    }
    this.jobs.close(job, job.cancelled ? 'cancelled' : 'failed');
    throw result.error;
  }

  async backtest(input: BacktestInput, from: JobOrigin = {}): Promise<{ job: string; result: unknown }> {
    const job = this.jobs.open(input.job_id, 'backtest', 1, from.client);
    const [result] = await this.runTasks(job, [
      {
        kind: 'backtest',
        candles: input.candles,
        strategy: input.strategy,
        params: input.params,
        settings: input.settings,
        equity_points: input.equity_points,
        trades_limit: input.trades_limit,
      },
    ], from.signal);
    return { job: job.id, result };
  }

  async compare(input: CompareInput, from: JobOrigin = {}): Promise<{ job: string; result: unknown }> {
    const job = this.jobs.open(input.job_id, 'compare', input.entries.length, from.client);
    const results = (await this.runTasks(
      job,
      input.entries.map((e) => ({
        kind: 'backtest' as const,
        candles: input.candles,
        strategy: e.strategy,
        params: e.params,
        settings: input.settings,
        equity_points: input.equity_points,
        trades_limit: 0,
      })), from.signal)) as { candles: unknown; metrics: Metrics; trades: unknown; strategy: string; params: unknown }[];
    const order = results
      .map((r, i) => ({ i, m: r.metrics }))
      .sort((a, b) => score(b.m, input.objective) - score(a.m, input.objective) || a.i - b.i);
    return {
      job: job.id,
      result: {
        candles: results[0]!.candles,
        objective: input.objective,
        results: results.map(({ candles: _c, trades: _t, ...rest }) => rest),
        ranking: order.map(({ i }) => ({ index: i, strategy: results[i]!.strategy, params: results[i]!.params, score: score(results[i]!.metrics, input.objective) })),
      },
    };
  }

  /**
   * Cuts `count` items (combinations, Monte Carlo runs) into ranges [from, to) for tasks: about four
   * per thread so the threads finish together; with a queue, the runner's count for `work` (bar
   * evaluations, or what costs as much).
   */
  private ranges(count: number, work: number): { from: number; to: number }[] {
    const spread = this.opts.spread;
    const parts = Math.max(1, Math.min(count, spread ? spread.chunksFor(count, work) : this.opts.pool.threads * 4));
    const size = Math.ceil(count / parts);
    const out: { from: number; to: number }[] = [];
    for (let i = 0; i < count; i += size) out.push({ from: i, to: Math.min(count, i + size) });
    return out;
  }

  /** Splits a grid into tasks (ranges above; each combination runs `barsEach` bars). */
  private chunk<T>(items: T[], barsEach: number): T[][] {
    return this.ranges(items.length, items.length * barsEach).map(({ from, to }) => items.slice(from, to));
  }

  async optimize(input: OptimizeInput, from: JobOrigin = {}): Promise<{ job: string; result: unknown }> {
    const { combos, asked, skipped } = input.combos
      ? { combos: input.combos, asked: input.asked ?? input.combos.length, skipped: input.skipped ?? 0 }
      : expandGrid(input.strategy, input.grid, input.params);
    const stat = statOf(input.objective);
    const job = this.jobs.open(input.job_id, 'optimize', combos.length, from.client);
    const parts = (await this.runTasks(
      job,
      this.chunk(combos, input.candles.count).map((c) => ({
        kind: 'grid' as const,
        candles: input.candles,
        strategy: input.strategy,
        combos: c,
        settings: input.settings,
        ...(stat ? { stat } : {}),
      })), from.signal)) as GridRow[][];
    const rows = parts.flat().map((r) => ({ params: r.params, metrics: r.metrics, objective_value: objectiveValue(r, input.objective) }));
    const key = rows.map((r) => rankKey(input.objective, r.objective_value));
    let best = rows.length ? 0 : -1;
    for (let i = 1; i < rows.length; i++) if (key[i]! > key[best]!) best = i;
    const top = rows
      .map((r, i) => ({ r, i }))
      .sort((a, b) => (key[b.i]! > key[a.i]! ? 1 : key[b.i]! < key[a.i]! ? -1 : a.i - b.i))
      .slice(0, 10)
      .map(({ r }) => r);
    return {
      job: job.id,
      result: {
        strategy: input.strategy,
        objective: input.objective,
        candles: specJson(input.candles),
        combinations: rows.length,
        asked,
        skipped,
        constraint: input.constraint ?? null,
        constrained: input.constrained ?? 0,
        search: input.search ?? { mode: 'grid', samples: rows.length, seed: input.candles.seed },
        best: best >= 0 ? rows[best] : null,
        top,
        results: rows.map((r) => ({ params: r.params, ...summary(r.metrics), objective_value: r.objective_value })),
        heatmap: input.heatmap && best >= 0 ? heatmapOf(rows, rows[best]!.params, input.heatmap) : null,
      },
    };
  }

  async walkForward(input: WalkForwardInput, from: JobOrigin = {}): Promise<{ job: string; result: unknown }> {
    const { combos, asked, skipped } = expandGrid(input.strategy, input.grid, input.params);
    const windows = walkForwardWindows(input.candles.count, input.in_sample, input.out_of_sample, input.step);
    const job = this.jobs.open(input.job_id, 'walkforward', windows.length * (combos.length + 1), from.client);
    const results = (await this.runTasks(
      job,
      windows.map((w) => ({
        kind: 'wf_window' as const,
        candles: input.candles,
        strategy: input.strategy,
        combos,
        settings: input.settings,
        objective: input.objective,
        window: w,
      })), from.signal)) as WindowResult[];
    return {
      job: job.id,
      result: {
        strategy: input.strategy,
        objective: input.objective,
        candles: specJson(input.candles),
        in_sample: input.in_sample,
        out_of_sample: input.out_of_sample,
        step: input.step,
        combinations: combos.length,
        asked,
        skipped,
        summary: summarizeWalkForward(results, input.settings.capital),
        windows: results.map(({ out_of_sample: { daily_returns: _d, ...oos }, ...w }) => ({ ...w, out_of_sample: oos })),
      },
    };
  }

  /**
   * Monte Carlo in two steps: the backtest on this process's pool (its metrics and trade P&L, one
   * unit), then the runs cut into chunks that carry the P&L (run i uses Rng(mc_seed + i) wherever
   * it runs, one unit each); the chunks' per-run figures, put together in run order, give the
   * percentiles and ruin shares of the whole job.
   */
  async monteCarlo(input: MonteCarloInput, from: JobOrigin = {}): Promise<{ job: string; result: unknown }> {
    const job = this.jobs.open(input.job_id, 'montecarlo', input.runs + 1, from.client);
    const ruinLevel = input.settings.capital * (1 - input.ruin_drawdown);
    const { backtest, parts } = await this.runJob(job, from.signal, async (step) => {
      const [bt] = (await step(
        [{ kind: 'mc_backtest', candles: input.candles, strategy: input.strategy, params: input.params, settings: input.settings }],
        { local: true },
      )) as { metrics: Metrics; pnls: Float64Array }[];
      // a run on n trades costs about as much as n bar evaluations (shuffle, path and bootstrap)
      const chunks = this.ranges(input.runs, input.runs * bt!.pnls.length).map(({ from, to }) => ({
        kind: 'mc_runs' as const,
        pnls: bt!.pnls,
        capital: input.settings.capital,
        from,
        to,
        seed: input.mc_seed,
        ruin_level: ruinLevel,
      }));
      return { backtest: bt!, parts: (await step(chunks)) as MonteCarloRuns[] };
    });
    return {
      job: job.id,
      result: {
        strategy: input.strategy,
        params: input.params,
        candles: specJson(input.candles),
        ruin_drawdown: input.ruin_drawdown,
        backtest: backtest.metrics,
        ...monteCarloSummary(backtest.pnls.length, input.runs, input.mc_seed, ruinLevel, parts),
      },
    };
  }
}

/** The job as a ChunkRunner sees it. */
function chunkJob(job: Job): ChunkJob {
  return {
    id: job.id,
    ctl: job.ctl,
    get cancelled() {
      return job.cancelled;
    },
    remoteProgress: (chunk, units) => void job.remote.set(chunk, units),
    onCancel: (fn) => void job.cancelHooks.push(fn),
  };
}

function score(m: Metrics, objective: Objective): number {
  return objective === 'max_drawdown' ? -m.max_drawdown : m[objective];
}

/**
 * The objective over two parameters: one cell per pair of their values that was run with every other
 * parameter at the best combination's value (null where no such combination ran: skipped, outside
 * the constraint or not drawn). Values ascending; values[j][i] is y_values[j] with x_values[i].
 */
export function heatmapOf(rows: { params: Record<string, number>; objective_value: number | null }[], best: Record<string, number>, [x, y]: [string, string]) {
  const xs = [...new Set(rows.map((r) => r.params[x]!))].sort((a, b) => a - b);
  const ys = [...new Set(rows.map((r) => r.params[y]!))].sort((a, b) => a - b);
  const others = Object.keys(best).filter((k) => k !== x && k !== y);
  const cell = new Map<string, number | null>();
  for (const r of rows) {
    if (others.every((k) => r.params[k] === best[k]) && !cell.has(`${r.params[x]}|${r.params[y]}`)) cell.set(`${r.params[x]}|${r.params[y]}`, r.objective_value);
  }
  return {
    x,
    y,
    x_values: xs,
    y_values: ys,
    fixed: Object.fromEntries(others.map((k) => [k, best[k]!])),
    values: ys.map((yv) => xs.map((xv) => cell.get(`${xv}|${yv}`) ?? null)),
  };
}
