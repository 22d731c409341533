import type { Candles } from './candles.js';
import { REASONS, type RawRun } from './engine.js';
import { annualReturnOf, sessionCloseIndices, TRADING_DAYS } from './metrics.js';
import { SYMBOL_SPECS } from './symbols.js';

/**
 * The statistics of backtesting.py's `stats` (backtesting/_stats.py, `compute_stats`) that apply to
 * this engine, on the same run as the metrics, and freqtrade's table of exits by reason. Names and
 * definitions: docs/trading.md ("Statistics"). Where backtesting.py gives NaN (nothing to divide
 * by, no trade, no drawdown) the figure is null; every other figure is a finite number (a figure
 * that overflows is null too). Ratios are rounded to 6 decimals, money to cents, durations are ms.
 */
export interface Stats {
  start: string;
  end: string;
  duration_ms: number;
  exposure_time: number;
  equity_final: number;
  equity_peak: number;
  return: number;
  buy_and_hold_return: number;
  annual_return: number;
  annual_volatility: number | null;
  sharpe_ratio: number | null;
  sortino_ratio: number | null;
  calmar_ratio: number | null;
  max_drawdown: number;
  avg_drawdown: number | null;
  max_drawdown_duration_ms: number | null;
  avg_drawdown_duration_ms: number | null;
  trades: number;
  win_rate: number | null;
  best_trade_return: number | null;
  worst_trade_return: number | null;
  avg_trade_return: number | null;
  max_trade_duration_ms: number | null;
  avg_trade_duration_ms: number | null;
  return_profit_factor: number | null;
  expectancy: number | null;
  sqn: number | null;
}

/** freqtrade's "exit reason stats": one row per exit reason, in the engine's order. */
export interface ExitRow {
  reason: (typeof REASONS)[number];
  exits: number;
  wins: number;
  draws: number;
  losses: number;
  win_rate: number | null;
  avg_return: number | null;
  total_pnl: number;
  total_return: number;
}

/** The numeric statistics an optimization may rank by (all but start and end). */
export const STAT_KEYS = [
  'duration_ms',
  'exposure_time',
  'equity_final',
  'equity_peak',
  'return',
  'buy_and_hold_return',
  'annual_return',
  'annual_volatility',
  'sharpe_ratio',
  'sortino_ratio',
  'calmar_ratio',
  'max_drawdown',
  'avg_drawdown',
  'max_drawdown_duration_ms',
  'avg_drawdown_duration_ms',
  'trades',
  'win_rate',
  'best_trade_return',
  'worst_trade_return',
  'avg_trade_return',
  'max_trade_duration_ms',
  'avg_trade_duration_ms',
  'return_profit_factor',
  'expectancy',
  'sqn',
] as const satisfies readonly (keyof Stats)[];
export type StatKey = (typeof STAT_KEYS)[number];

/** Statistics where lower is better (an optimization turns their sign). */
export const LOWER_IS_BETTER: ReadonlySet<string> = new Set([
  'annual_volatility',
  'max_drawdown',
  'avg_drawdown',
  'max_drawdown_duration_ms',
  'avg_drawdown_duration_ms',
]);

const ratio = (x: number) => Math.round(x * 1e6) / 1e6 + 0;
const money = (x: number) => Math.round(x * 100) / 100 + 0;
/** null for NaN and infinities (backtesting.py's NaN; JSON has neither). */
const fin = (x: number): number | null => (Number.isFinite(x) ? ratio(x) : null);
const finMs = (x: number): number | null => (Number.isFinite(x) ? Math.round(x) : null);

/** backtesting.py's geometric_mean: exp(mean(log(1 + r))) - 1, 0 when some 1 + r <= 0, NaN when empty. */
export function geometricMean(r: ArrayLike<number>): number {
  if (r.length === 0) return NaN;
  let s = 0;
  for (let i = 0; i < r.length; i++) {
    const x = 1 + r[i]!;
    if (!(x > 0)) return 0;
    s += Math.log(x);
  }
  return Math.exp(s / r.length) - 1;
}

/** Each trade's return: net P&L over the notional at entry (entry price x point value x contracts). */
export function tradeReturns(run: RawRun, cs: Candles, contracts: number): Float64Array {
  const pv = SYMBOL_SPECS[cs.symbol].pointValue;
  const t = run.trades;
  const out = new Float64Array(t.n);
  for (let k = 0; k < t.n; k++) out[k] = t.pnl[k]! / (t.entryPrice[k]! * pv * contracts);
  return out;
}

/**
 * Drawdown periods (backtesting.py's compute_drawdown_duration_peaks) on the points capital,
 * E_0 .. E_{n-1} at times t_0, t_0 .. t_{n-1} (the capital stands at the first bar's time): a period
 * runs from a point with no drawdown to the next one more than one point later (or to the last point,
 * recovered or not); its duration is the time between the two, its depth the largest drawdown inside.
 */
export function drawdownPeriods(equity: ArrayLike<number>, times: (i: number) => number, capital: number): { duration: number; depth: number }[] {
  const n = equity.length;
  const at = (j: number) => (j === 0 ? capital : equity[j - 1]!);
  const time = (j: number) => times(j === 0 ? 0 : j - 1);
  const out: { duration: number; depth: number }[] = [];
  let peak = capital;
  let prevZero = 0;
  let depth = 0;
  for (let j = 1; j <= n; j++) {
    const e = at(j);
    if (e >= peak) {
      peak = e;
      if (j > prevZero + 1) out.push({ duration: time(j) - time(prevZero), depth });
      prevZero = j;
      depth = 0;
    } else {
      const dd = 1 - e / peak;
      if (dd > depth) depth = dd;
      if (j === n && j > prevZero + 1) out.push({ duration: time(j) - time(prevZero), depth });
    }
  }
  return out;
}

export function computeStats(run: RawRun, cs: Candles, contracts: number): Stats {
  const { equity, capital, trades } = run;
  const { tradeFrom, to } = run.range;
  const n = equity.length;
  const final = n ? equity[n - 1]! : capital;
  const tStart = cs.t[tradeFrom] ?? 0;
  const tEnd = cs.t[to - 1] ?? tStart;
  // exposure as backtesting.py counts it: every bar from a trade's entry bar to its exit bar
  const held = new Uint8Array(n);
  for (let k = 0; k < trades.n; k++) {
    const a = Math.max(trades.entryBar[k]!, tradeFrom);
    const b = Math.min(trades.exitBar[k]!, to - 1);
    for (let i = a; i <= b; i++) held[i - tradeFrom] = 1;
  }
  let exposed = 0;
  for (let i = 0; i < n; i++) exposed += held[i]!;
  let peak = capital;
  let maxDd = 0;
  for (let i = 0; i < n; i++) {
    const e = equity[i]!;
    if (e > peak) peak = e;
    else if (1 - e / peak > maxDd) maxDd = 1 - e / peak;
  }
  // daily returns from the capital to each session close; compounded annual figures
  const closeAt = sessionCloseIndices(cs, tradeFrom, to);
  const days = closeAt.length;
  const r = new Float64Array(days);
  let prev = capital;
  for (let d = 0; d < days; d++) {
    const e = equity[closeAt[d]!]!;
    r[d] = e / prev - 1;
    prev = e;
  }
  const annual = annualReturnOf(equity, closeAt, capital);
  const g = days ? (annual === -1 ? -1 : (1 + annual) ** (1 / TRADING_DAYS) - 1) : 0;
  let mean = 0;
  for (let d = 0; d < days; d++) mean += r[d]! / days;
  let v = 0;
  let down = 0;
  for (let d = 0; d < days; d++) {
    v += (r[d]! - mean) ** 2;
    down += Math.min(r[d]!, 0) ** 2;
  }
  const variance = days > 1 ? v / (days - 1) : NaN;
  const N = TRADING_DAYS;
  // the difference of two nearly equal powers can round below 0 when the variance is tiny: 0 then
  const vol = Math.sqrt(Math.max(0, (variance + (1 + g) ** 2) ** N - (1 + g) ** (2 * N)));
  const sortinoDen = Math.sqrt(down / days) * Math.sqrt(N);
  const dds = drawdownPeriods(equity, (i) => cs.t[tradeFrom + i]!, capital);
  const rets = tradeReturns(run, cs, contracts);
  const m = trades.n;
  let wins = 0;
  let best = -Infinity;
  let worst = Infinity;
  let rSum = 0;
  let pos = 0;
  let neg = 0;
  let plSum = 0;
  let durMax = -Infinity;
  let durSum = 0;
  for (let k = 0; k < m; k++) {
    const x = rets[k]!;
    if (trades.pnl[k]! > 0) wins++;
    if (x > best) best = x;
    if (x < worst) worst = x;
    rSum += x;
    if (x > 0) pos += x;
    else if (x < 0) neg -= x;
    plSum += trades.pnl[k]!;
    const dur = cs.t[trades.exitBar[k]!]! - cs.t[trades.entryBar[k]!]!;
    if (dur > durMax) durMax = dur;
    durSum += dur;
  }
  const plMean = plSum / m;
  let plSs = 0;
  for (let k = 0; k < m; k++) plSs += (trades.pnl[k]! - plMean) ** 2;
  const plSd = Math.sqrt(plSs / (m - 1));
  const none = m === 0;
  return {
    start: new Date(tStart).toISOString(),
    end: new Date(tEnd).toISOString(),
    duration_ms: tEnd - tStart,
    exposure_time: n ? ratio(exposed / n) : 0,
    equity_final: money(final),
    equity_peak: money(peak),
    return: ratio(final / capital - 1),
    buy_and_hold_return: n ? ratio(cs.c[to - 1]! / cs.c[tradeFrom]! - 1) : 0,
    annual_return: ratio(annual),
    annual_volatility: fin(vol),
    sharpe_ratio: vol > 0 ? fin(annual / vol) : null,
    sortino_ratio: sortinoDen > 0 ? fin(annual / sortinoDen) : null,
    calmar_ratio: maxDd > 0 ? fin(annual / maxDd) : null,
    max_drawdown: ratio(maxDd),
    avg_drawdown: dds.length ? fin(dds.reduce((a, p) => a + p.depth, 0) / dds.length) : null,
    max_drawdown_duration_ms: dds.length ? dds.reduce((a, p) => Math.max(a, p.duration), 0) : null,
    avg_drawdown_duration_ms: dds.length ? finMs(dds.reduce((a, p) => a + p.duration, 0) / dds.length) : null,
    trades: m,
    win_rate: none ? null : ratio(wins / m),
    best_trade_return: none ? null : fin(best),
    worst_trade_return: none ? null : fin(worst),
    avg_trade_return: none ? null : fin(geometricMean(rets)),
    max_trade_duration_ms: none ? null : durMax,
    avg_trade_duration_ms: none ? null : finMs(durSum / m),
    return_profit_factor: neg > 0 ? fin(pos / neg) : null,
    expectancy: none ? null : fin(rSum / m),
    sqn: plSd > 0 ? fin((Math.sqrt(m) * plMean) / plSd) : null,
  };
}

/** freqtrade's exit reason table: every reason of the engine, with or without exits. */
export function exitsByReason(run: RawRun, cs: Candles, contracts: number): ExitRow[] {
  const rets = tradeReturns(run, cs, contracts);
  const t = run.trades;
  return REASONS.map((reason, code) => {
    let exits = 0;
    let wins = 0;
    let draws = 0;
    let losses = 0;
    let pnl = 0;
    let rs = 0;
    for (let k = 0; k < t.n; k++) {
      if (t.reason[k] !== code) continue;
      exits++;
      const p = t.pnl[k]!;
      if (p > 0) wins++;
      else if (p < 0) losses++;
      else draws++;
      pnl += p;
      rs += rets[k]!;
    }
    return {
      reason,
      exits,
      wins,
      draws,
      losses,
      win_rate: exits ? ratio(wins / exits) : null,
      avg_return: exits ? ratio(rs / exits) : null,
      total_pnl: money(pnl),
      total_return: ratio(pnl / run.capital),
    };
  });
}
