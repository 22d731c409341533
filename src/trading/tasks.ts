import type { StatKey } from './stats.js';
import { candlesFor, generateCandles, type CandleSpec } from './candles.js';
import {
  backtest,
  CancelledError,
  checkCancel,
  gridRows,
  runStrategy,
  tick,
  walkForwardWindow,
  type BacktestTask,
  type Objective,
  type WindowSpec,
} from './analyses.js';
import { computeMetrics } from './metrics.js';
import { monteCarloRuns } from './monte-carlo.js';
import { defaultSettings, type Settings } from './engine.js';
import { expandGrid, STRATEGIES, type StrategyId } from './strategies.js';

/**
 * The trading analyses' task interface: pure input -> result, no I/O, run on worker threads by an
 * adapter (src/workers: Piscina) behind TaskRunner, or in process by tests. Tasks carry seeds and parameters, never
 * candles: each worker regenerates the (deterministic) candles and keeps the last set cached.
 * `ctl` is a SharedArrayBuffer-backed Int32Array: [0] cancel flag (set by the main thread), [1] units
 * done (read by the main thread to publish progress).
 */
export type TradingTask =
  | ({ kind: 'backtest'; ctl?: Int32Array } & BacktestTask)
  | {
      kind: 'grid';
      ctl?: Int32Array;
      candles: CandleSpec;
      strategy: StrategyId;
      combos: Record<string, number>[];
      settings: Settings;
      /** The statistic each row also computes (an optimization ranked by a statistic). */
      stat?: StatKey;
    }
  | {
      kind: 'wf_window';
      ctl?: Int32Array;
      candles: CandleSpec;
      strategy: StrategyId;
      combos: Record<string, number>[];
      settings: Settings;
      objective: Objective;
      window: WindowSpec;
    }
  | {
      /** The backtest of a Monte Carlo job: its metrics and its trades' P&L (one unit). */
      kind: 'mc_backtest';
      ctl?: Int32Array;
      candles: CandleSpec;
      strategy: StrategyId;
      params: Record<string, number>;
      settings: Settings;
    }
  | {
      /** A worker's warm-up (warmUp below): the pool gives one to each thread when it starts. */
      kind: 'warmup';
      ctl?: Int32Array;
    }
  | {
      /** Runs [from, to) of a Monte Carlo job on the backtest's trade P&L (one unit per run). */
      kind: 'mc_runs';
      ctl?: Int32Array;
      pnls: Float64Array;
      capital: number;
      from: number;
      to: number;
      seed: number;
      ruin_level: number;
    };

export type TaskOutcome = { ok: true; value: unknown } | { ok: false; cancelled: true };

/** What the trading service needs from a pool of workers. */
export interface TaskRunner {
  readonly threads: number;
  run(task: TradingTask): Promise<TaskOutcome>;
  close(): Promise<void>;
}

/**
 * A job whose tasks (chunks) may run on several processes: `ctl` counts the units of the chunks
 * run here and carries the cancel flag; `remoteProgress` takes the units another process reports
 * for one chunk (its latest figure replaces the previous one); `onCancel` hooks run once when the
 * job is cancelled.
 */
export interface ChunkJob {
  readonly id: string;
  readonly ctl: Int32Array;
  readonly cancelled: boolean;
  remoteProgress(chunk: number, units: number): void;
  onCancel(fn: () => void): void;
}

/** What another process knows of a job: who started it, what it is. */
export interface JobRecord {
  client: string;
  kind: string;
  total: number;
}

/**
 * What the trading service needs to spread a job's chunks over every process sharing a queue
 * (adapter: src/workers/queue.ts, BullMQ on Redis). The chunks run on the local pool first; the
 * others take what the local pool has not claimed. Outcomes come back in task order, so the
 * assembled result is the one a single process computes.
 */
export interface ChunkRunner {
  /**
   * How many chunks a job of `items` units (grid combinations, Monte Carlo runs), `work` bar
   * evaluations in all (a Monte Carlo run on n trades counts n), is cut into: more than the local
   * threads (so other processes get a share), fewer when the work is small (a chunk costs a few
   * Redis round trips).
   */
  chunksFor(items: number, work: number): number;
  run(job: ChunkJob, tasks: TradingTask[]): Promise<PromiseSettledResult<TaskOutcome>[]>;
  /** Records a job admitted here (its owner), so a cancel asked of another process can reach it. */
  announce(jobId: string, record: JobRecord, ttlMs: number): Promise<void>;
  forget(jobId: string): Promise<void>;
  /** The record of a job admitted on some process (undefined: none runs under that id). */
  lookup(jobId: string): Promise<JobRecord | undefined>;
  /** Asks the process that admitted the job to cancel it; `onCancelRequest` receives such asks. */
  requestCancel(jobId: string): Promise<void>;
  onCancelRequest(fn: (jobId: string) => void): void;
  /** Counts of this process: chunks of its last job, chunks of its own jobs it ran, chunks it ran for the queue (and now), chunks run again. */
  stats(): { chunks: number; claimed: number; served: number; serving: number; rerun: number };
  close(): Promise<void>;
}

/** Runs one task to its outcome (a cancelled task is an outcome, not an error). */
export function runTask(task: TradingTask): TaskOutcome {
  try {
    return { ok: true, value: dispatch(task) };
  } catch (err) {
    if (err instanceof CancelledError) return { ok: false, cancelled: true };
    throw err;
  }
}

function dispatch(task: TradingTask): unknown {
  const ctl = task.ctl;
  switch (task.kind) {
    case 'backtest':
      return backtest(task, ctl);
    case 'grid': {
      checkCancel(ctl);
      return gridRows(candlesFor(task.candles), task.strategy, task.combos, task.settings, undefined, ctl, task.stat);
    }
    case 'wf_window': {
      checkCancel(ctl);
      return walkForwardWindow(candlesFor(task.candles), task.strategy, task.combos, task.settings, task.objective, task.window, ctl);
    }
    case 'mc_backtest': {
      checkCancel(ctl);
      const cs = candlesFor(task.candles);
      const raw = runStrategy(cs, task.strategy, task.params, task.settings);
      tick(ctl);
      return { metrics: computeMetrics(raw, cs), pnls: Float64Array.from(raw.trades.pnl) };
    }
    case 'mc_runs':
      return monteCarloRuns(task.pnls, task.capital, task.from, task.to, task.seed, task.ruin_level, ctl);
    case 'warmup':
      return warmUp();
  }
}

/**
 * What a worker's warm-up runs: candle sets (seed 1, 2, ...) and how many of each strategy's first
 * default-grid combinations run on each. Several small sets give the hot loops the type feedback of
 * more than one candle set; one long set compiles them for arrays the size of a real request's.
 */
export const WARM_SETS: readonly { count: number; combos: number }[] = [
  { count: 4000, combos: 6 },
  { count: 4000, combos: 6 },
  { count: 4000, combos: 6 },
  { count: 100_000, combos: 2 },
];

/**
 * Warms a worker thread (WARM_SETS; about 0.27 s of one core), the pool's first task on each thread
 * (src/workers/pool.ts): the hot loops (candles, indicator series, actions, the batch engine, the
 * metrics) are compiled before a request needs them. Measured on the bench machine, a hub's first
 * 500-combination grid on 100k candles: 0.52-0.59 s without a warm-up, 0.42-0.48 s with the small
 * sets only, 0.34-0.40 s with the long one too. The runs leave nothing behind that a later run reads (their scratch buffers
 * are overwritten). Returns the rows' total net profit.
 */
export function warmUp(sets: readonly { count: number; combos: number }[] = WARM_SETS): number {
  const settings = defaultSettings();
  let total = 0;
  sets.forEach(({ count, combos }, i) => {
    const cs = generateCandles({ seed: i + 1, symbol: 'ES', timeframe: '1m', count });
    for (const id of STRATEGIES) {
      const rows = gridRows(cs, id, expandGrid(id, undefined).combos.slice(0, combos), settings, undefined);
      for (const row of rows) total += row.metrics.net_profit;
    }
  });
  return total;
}
