import { atrOf, batchActions } from './batch.js';
import { candleChecksum, candlesFor, specJson, type Candles, type CandleSpec } from './candles.js';
import { Engine, type RawRun, type RunRange, type Settings } from './engine.js';
import { emptyTradeLog, needsAtr, runBatch } from './engine-batch.js';
import { computeMetrics, equityCurve, monthlyPerformance, sharpeOf, tradeRows, type Metrics } from './metrics.js';
import { computeStats, exitsByReason, LOWER_IS_BETTER, STAT_KEYS, type StatKey } from './stats.js';
import { STRATEGY_DEFS, type StrategyId } from './strategies.js';

/**
 * The analyses as pure functions of (candles, strategy, parameters, settings): backtest, the grid
 * unit of optimize, one walk-forward window, Monte Carlo. Workers call them; tests call them
 * directly. `ctl` (optional) is the job's shared control block: [0] = cancel flag, [1] = units done.
 */
export type Control = Int32Array | undefined;

export class CancelledError extends Error {
  constructor() {
    super('cancelled');
    this.name = 'CancelledError';
  }
}

export function checkCancel(ctl: Control): void {
  if (ctl && Atomics.load(ctl, 0) !== 0) throw new CancelledError();
}
export function tick(ctl: Control, n = 1): void {
  if (ctl) Atomics.add(ctl, 1, n);
}

export const OBJECTIVES = ['sharpe', 'net_profit', 'profit_factor', 'win_rate', 'sqn', 'max_drawdown'] as const;
export type Objective = (typeof OBJECTIVES)[number];

/**
 * What an optimization may rank by: the metrics above and every statistic of the report (stats.ts;
 * a name both have, such as max_drawdown, is the metric, which is the same figure).
 */
export const OPTIMIZE_OBJECTIVES = [...OBJECTIVES, ...STAT_KEYS.filter((k) => !(OBJECTIVES as readonly string[]).includes(k))] as [
  Objective,
  ...(Objective | StatKey)[],
];
export type OptimizeObjective = (typeof OPTIMIZE_OBJECTIVES)[number];
/** The statistic a grid row must compute for this objective (undefined: a metric, always there). */
export const statOf = (o: OptimizeObjective): StatKey | undefined => ((OBJECTIVES as readonly string[]).includes(o) ? undefined : (o as StatKey));

/** A grid row: its parameters, its metrics and, when the objective is a statistic, that statistic. */
export interface GridRow {
  params: Record<string, number>;
  metrics: Metrics;
  value?: number | null;
}

/** The objective's value of a row (null: undefined, as backtesting.py's NaN). */
export function objectiveValue(r: GridRow, o: OptimizeObjective): number | null {
  const st = statOf(o);
  return st === undefined ? r.metrics[o as Objective] : (r.value ?? null);
}

/** Ranking key: higher is better; lower-is-better figures turned round; undefined values last. */
export function rankKey(o: OptimizeObjective, v: number | null): number {
  if (v === null) return -Infinity;
  return o === 'max_drawdown' || LOWER_IS_BETTER.has(o) ? -v : v;
}

/** Higher is better, except max_drawdown (lower is better). */
export function score(m: Metrics, objective: Objective): number {
  return objective === 'max_drawdown' ? -m.max_drawdown : m[objective];
}

/** Index of the best row; ties keep the first in grid order. */
export function bestIndex(rows: { metrics: Metrics }[], objective: Objective): number {
  let best = -1;
  let bestScore = -Infinity;
  rows.forEach((r, i) => {
    const s = score(r.metrics, objective);
    if (s > bestScore) {
      bestScore = s;
      best = i;
    }
  });
  return best;
}

/** Buffers reused by the runs of a grid (each run's equity is read before the next run starts). */
let actionsBuf = new Int8Array(0);
let equityBuf = new Float64Array(0);
const scratchActions = (n: number) => (actionsBuf.length >= n ? actionsBuf : (actionsBuf = new Int8Array(n)));
const scratchEquity = (n: number) => (equityBuf.length >= n ? equityBuf : (equityBuf = new Float64Array(n)));
const tradesBuf = emptyTradeLog();

/**
 * One run of a strategy. `shared`: a run among many of one job (grid, walk-forward) takes its
 * indicator series from the candles' SeriesCache (batch.ts); a lone run streams them (no series kept).
 * `scratch` (grid rows): the actions, equity and trade log live in buffers the next run reuses.
 */
export function runStrategy(
  cs: Candles,
  strategy: StrategyId,
  params: Record<string, number>,
  settings: Settings,
  range?: RunRange,
  shared = false,
  scratch = false,
): RawRun {
  if (!shared) return new Engine(cs, settings, range).run(STRATEGY_DEFS[strategy].create(params, cs.barsPerSession));
  // runs of one job: indicator series computed once (per candle set, range and parameters) and shared;
  // the batch loop directly (what a fresh Engine without a fill listener runs)
  const r = range ?? { from: 0, tradeFrom: 0, to: cs.n };
  const atrS = needsAtr(settings) ? atrOf(cs, settings.atr_period, r.from, r.to) : null;
  const actions = scratch ? scratchActions(cs.n) : new Int8Array(cs.n);
  batchActions(strategy, params, cs, r.from, r.to, actions);
  return scratch ? runBatch(cs, settings, r, actions, atrS, scratchEquity(r.to), tradesBuf) : runBatch(cs, settings, r, actions, atrS);
}

export interface BacktestTask {
  candles: CandleSpec;
  strategy: StrategyId;
  params: Record<string, number>;
  settings: Settings;
  equity_points: number;
  trades_limit: number;
}

export function backtestResult(cs: Candles, t: BacktestTask) {
  const raw = runStrategy(cs, t.strategy, t.params, t.settings);
  const warm = STRATEGY_DEFS[t.strategy].warmup(t.params, cs.barsPerSession);
  return {
    strategy: t.strategy,
    params: t.params,
    settings: t.settings,
    candles: {
      ...specJson(t.candles),
      checksum: candleChecksum(cs),
      from: new Date(cs.t[0]!).toISOString(),
      to: new Date(cs.t[cs.n - 1]!).toISOString(),
    },
    warmup: warm,
    metrics: computeMetrics(raw, cs),
    stats: computeStats(raw, cs, t.settings.contracts),
    exits: exitsByReason(raw, cs, t.settings.contracts),
    monthly: monthlyPerformance(raw, cs),
    equity_curve: equityCurve(raw, cs, t.equity_points),
    trades: tradeRows(raw, cs, t.settings.contracts, t.trades_limit),
    trades_total: raw.trades.n,
  };
}

export function backtest(t: BacktestTask, ctl?: Control) {
  checkCancel(ctl);
  const r = backtestResult(candlesFor(t.candles), t);
  tick(ctl);
  return r;
}

/** A chunk of a grid: each combination's metrics on the same candles. */
export function gridRows(
  cs: Candles,
  strategy: StrategyId,
  combos: Record<string, number>[],
  settings: Settings,
  range: RunRange | undefined,
  ctl?: Control,
  stat?: StatKey,
): GridRow[] {
  const rows: GridRow[] = [];
  for (const params of combos) {
    checkCancel(ctl);
    const raw = runStrategy(cs, strategy, params, settings, range, true, true);
    if (stat === undefined) rows.push({ params, metrics: computeMetrics(raw, cs) });
    else rows.push({ params, metrics: computeMetrics(raw, cs), value: computeStats(raw, cs, settings.contracts)[stat] });
    tick(ctl);
  }
  return rows;
}

// ---- walk-forward --------------------------------------------------------------------------------

export interface WindowSpec {
  index: number;
  /** In-sample [start, start+inSample), out-of-sample [start+inSample, start+inSample+outOfSample). */
  start: number;
  inSample: number;
  outOfSample: number;
}

export function walkForwardWindows(n: number, inSample: number, outOfSample: number, step: number): WindowSpec[] {
  const out: WindowSpec[] = [];
  for (let s = 0, k = 0; s + inSample + outOfSample <= n; s += step, k++) {
    out.push({ index: k, start: s, inSample, outOfSample });
  }
  return out;
}

export interface WindowResult {
  index: number;
  in_sample: { from: string; to: string; bars: number; best_params: Record<string, number>; metrics: Metrics };
  out_of_sample: { from: string; to: string; bars: number; metrics: Metrics; daily_returns: number[] };
  /** Annualized OOS return / annualized IS return; null when the IS return is not positive. */
  efficiency: number | null;
}

/**
 * One window: grid on the in-sample bars, then the best parameters on the out-of-sample bars with
 * indicators warmed up on the in-sample bars before it; only out-of-sample trades count. Reads no
 * bar at or after start + inSample + outOfSample (the look-ahead test holds it to that).
 */
export function walkForwardWindow(
  cs: Candles,
  strategy: StrategyId,
  combos: Record<string, number>[],
  settings: Settings,
  objective: Objective,
  w: WindowSpec,
  ctl?: Control,
): WindowResult {
  const isTo = w.start + w.inSample;
  const oosTo = isTo + w.outOfSample;
  const rows = gridRows(cs, strategy, combos, settings, { from: w.start, tradeFrom: w.start, to: isTo }, ctl);
  const best = rows[Math.max(0, bestIndex(rows, objective))]!;
  checkCancel(ctl);
  const oosRaw = runStrategy(cs, strategy, best.params, settings, { from: w.start, tradeFrom: isTo, to: oosTo }, true);
  const oos = computeMetrics(oosRaw, cs);
  tick(ctl);
  const iso = (i: number) => new Date(cs.t[i]!).toISOString();
  const efficiency = best.metrics.annual_return > 0 ? round6(oos.annual_return / best.metrics.annual_return) : null;
  return {
    index: w.index,
    in_sample: { from: iso(w.start), to: iso(isTo - 1), bars: w.inSample, best_params: best.params, metrics: best.metrics },
    out_of_sample: { from: iso(isTo), to: iso(oosTo - 1), bars: w.outOfSample, metrics: oos, daily_returns: dailyReturns(oosRaw, cs) },
    efficiency,
  };
}

function dailyReturns(run: RawRun, cs: Candles): number[] {
  const { tradeFrom, to } = run.range;
  const out: number[] = [];
  let prev = run.capital;
  for (let i = tradeFrom; i < to; i++) {
    if (i === to - 1 || cs.session[i + 1] !== cs.session[i]) {
      const e = run.equity[i - tradeFrom]!;
      out.push(e / prev - 1);
      prev = e;
    }
  }
  return out;
}

export const round6 = (x: number) => Math.round(x * 1e6) / 1e6 + 0;
const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);

/**
 * Summary of the windows. robustness_score (0-100) =
 *   100 x (0.4 P + 0.3 clamp(WFE, 0, 1) + 0.2 S + 0.1 clamp(SharpeOOS / 2, 0, 1))
 * P = share of profitable out-of-sample windows; WFE = mean of the defined window efficiencies (0 when
 * none); S = parameter stability = 1 - mean over parameters of min(1, CV), CV = population standard
 * deviation / |mean| of the value chosen in each window (0 when constant); SharpeOOS = Sharpe of the
 * stitched out-of-sample daily returns.
 */
export function summarizeWalkForward(windows: WindowResult[], capital: number) {
  const n = windows.length;
  const profitable = windows.filter((w) => w.out_of_sample.metrics.net_profit > 0).length;
  const effs = windows.map((w) => w.efficiency).filter((e): e is number => e !== null);
  const wfe = effs.length ? effs.reduce((a, b) => a + b, 0) / effs.length : null;
  const names = n ? Object.keys(windows[0]!.in_sample.best_params) : [];
  const variation: Record<string, { mean: number; sd: number; cv: number; values: number[] }> = {};
  let cvSum = 0;
  for (const name of names) {
    const vals = windows.map((w) => w.in_sample.best_params[name]!);
    const mean = vals.reduce((a, b) => a + b, 0) / vals.length;
    const sd = Math.sqrt(vals.reduce((a, b) => a + (b - mean) ** 2, 0) / vals.length);
    const cv = sd === 0 ? 0 : mean === 0 ? 1 : sd / Math.abs(mean);
    variation[name] = { mean: round6(mean), sd: round6(sd), cv: round6(cv), values: vals };
    cvSum += Math.min(1, cv);
  }
  const stability = names.length ? 1 - cvSum / names.length : 1;
  // stitched out-of-sample: daily returns chained window after window
  const stitched: number[] = [];
  let equity = capital;
  for (const w of windows) {
    for (const r of w.out_of_sample.daily_returns) {
      equity *= 1 + r;
      stitched.push(equity);
    }
  }
  const sharpe = sharpeOf(stitched, capital);
  const P = n ? profitable / n : 0;
  const robustness = 100 * (0.4 * P + 0.3 * clamp01(wfe ?? 0) + 0.2 * stability + 0.1 * clamp01(sharpe / 2));
  return {
    windows: n,
    profitable_oos_share: round6(P),
    walk_forward_efficiency: wfe === null ? null : round6(wfe),
    parameter_stability: round6(stability),
    parameter_variation: variation,
    oos_net_profit: Math.round(windows.reduce((a, w) => a + w.out_of_sample.metrics.net_profit, 0) * 100) / 100,
    oos_trades: windows.reduce((a, w) => a + w.out_of_sample.metrics.trades, 0),
    oos_sharpe: round6(sharpe),
    robustness_score: Math.round(robustness * 100) / 100,
  };
}
