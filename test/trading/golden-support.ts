import { runStrategy, walkForwardWindows } from '../../src/trading/analyses.js';
import { monteCarlo, monteCarloSummary, type MonteCarloRuns } from '../../src/trading/monte-carlo.js';
import { candlesFor, type CandleSpec } from '../../src/trading/candles.js';
import type { Settings } from '../../src/trading/engine.js';
import { computeMetrics } from '../../src/trading/metrics.js';
import type { StrategyId } from '../../src/trading/strategies.js';
import { runTask as run, type TradingTask } from '../../src/trading/tasks.js';

/** Runs a task in process and returns its value (a cancelled task fails the test). */
export function runTask(task: TradingTask): unknown {
  const r = run(task);
  if (!r.ok) throw new Error('task cancelled');
  return r.value;
}

export const walkForwardWindowsFor = (spec: CandleSpec, inSample: number, outOfSample: number, step: number) =>
  walkForwardWindows(spec.count, inSample, outOfSample, step);

export interface MonteCarloCase {
  candles: CandleSpec;
  strategy: StrategyId;
  params: Record<string, number>;
  settings: Settings;
  runs: number;
  seed: number;
  ruin_level: number;
}

/** A Monte Carlo job as the service runs it: the backtest task, then the runs in the given cuts, then the summary. */
export function monteCarloJob(c: MonteCarloCase, cuts: number[] = []): { metrics: unknown; monte_carlo: unknown } {
  const bt = runTask({ kind: 'mc_backtest', candles: c.candles, strategy: c.strategy, params: c.params, settings: c.settings }) as { metrics: unknown; pnls: Float64Array };
  const bounds = [0, ...cuts.filter((x) => x > 0 && x < c.runs), c.runs];
  const parts = bounds.slice(1).map((to, k) =>
    runTask({ kind: 'mc_runs', pnls: bt.pnls, capital: c.settings.capital, from: bounds[k]!, to, seed: c.seed, ruin_level: c.ruin_level }) as MonteCarloRuns,
  );
  return { metrics: bt.metrics, monte_carlo: monteCarloSummary(bt.pnls.length, c.runs, c.seed, c.ruin_level, parts) };
}

/** The same job computed in one piece from the analysis functions (the backtest, then every run at once). */
export function monteCarloWhole(c: MonteCarloCase): { metrics: unknown; monte_carlo: unknown } {
  const cs = candlesFor(c.candles);
  const raw = runStrategy(cs, c.strategy, c.params, c.settings);
  return { metrics: computeMetrics(raw, cs), monte_carlo: monteCarlo(raw.trades.pnl, c.settings.capital, c.runs, c.seed, c.ruin_level) };
}
