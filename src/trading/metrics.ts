import type { Candles } from './candles.js';
import { REASONS, type RawRun } from './engine.js';
import { seriesCache } from './series.js';
import { sessionMonth } from './symbols.js';

/**
 * Result metrics. Every number is finite (JSON has no Infinity/NaN); the edge cases are defined:
 * - no trades: win_rate 0, profit_factor 0, avg_trade 0, sqn 0;
 * - no losing trade (and at least one winner): profit_factor = PROFIT_FACTOR_CAP;
 * - Sharpe with fewer than 2 daily returns or zero deviation: 0;
 * - annual return: -1 once equity is at or below 0 at a session close, at most ANNUAL_RETURN_CAP.
 * Money is rounded to cents, ratios to 6 decimals (Math.round: the same everywhere).
 */
export const PROFIT_FACTOR_CAP = 100;
export const TRADING_DAYS = 252;
/** Largest annual return reported (a few days' gain compounded over 252 days can overflow to Infinity). */
export const ANNUAL_RETURN_CAP = 1e6;

const money = (x: number) => Math.round(x * 100) / 100 + 0; // + 0 turns -0 into 0
const ratio = (x: number) => Math.round(x * 1e6) / 1e6 + 0;

export interface Metrics {
  trades: number;
  wins: number;
  losses: number;
  win_rate: number;
  profit_factor: number;
  net_profit: number;
  gross_profit: number;
  gross_loss: number;
  total_return: number;
  annual_return: number;
  sharpe: number;
  max_drawdown: number;
  max_drawdown_usd: number;
  exposure: number;
  sqn: number;
  avg_trade: number;
  best_trade: number;
  worst_trade: number;
  commission: number;
  final_equity: number;
  bars: number;
  days: number;
  risk_stops: number;
}

export interface TradeRow {
  side: 'long' | 'short';
  entry_time: string;
  exit_time: string;
  entry_price: number;
  exit_price: number;
  contracts: number;
  pnl: number;
  reason: string;
}

export interface MonthRow {
  month: string;
  pnl: number;
  return: number;
  trades: number;
}

/**
 * Indices (into the run's equity) of the last bar of each session in bars [tradeFrom, to): the same
 * for every run of a job on that range, so kept in the candles' SeriesCache.
 */
export function sessionCloseIndices(cs: Candles, tradeFrom: number, to: number): Int32Array {
  return seriesCache(cs).get(
    `closes:${tradeFrom}:${to}`,
    () => {
      const S = cs.session;
      let n = 0;
      for (let i = tradeFrom; i < to; i++) if (i === to - 1 || S[i + 1] !== S[i]) n++;
      const out = new Int32Array(n);
      let k = 0;
      for (let i = tradeFrom; i < to; i++) if (i === to - 1 || S[i + 1] !== S[i]) out[k++] = i - tradeFrom;
      return out;
    },
    (v) => v.byteLength,
  );
}

/** Daily returns of sharpeOf, reused from run to run (a grid computes one Sharpe per combination). */
let returnsBuf = new Float64Array(0);

/**
 * Sharpe ratio, the vectorbt/Lean form: daily returns r_d = (E_d - E_{d-1}) / |E_{d-1}| of the equity
 * at each session's last bar (E_{-1} = capital; the same as E_d/E_{d-1} - 1 while equity is positive),
 * Sharpe = mean(r) / std(r, ddof=1) * sqrt(252), risk-free rate 0.
 */
export function sharpeOf(closes: ArrayLike<number>, capital: number): number {
  return sharpeAt(closes, null, capital);
}

/** sharpeOf of values[at[i]] (at null: of values[i]). */
function sharpeAt(values: ArrayLike<number>, at: Int32Array | null, capital: number): number {
  const n = at !== null ? at.length : values.length;
  if (n < 2) return 0;
  let prev = capital;
  const r = returnsBuf.length >= n ? returnsBuf : (returnsBuf = new Float64Array(n));
  let sum = 0;
  for (let i = 0; i < n; i++) {
    const e = values[at !== null ? at[i]! : i]!;
    // relative to |previous| so a loss stays negative even past zero equity; 0 after exactly 0
    const x = prev === 0 ? 0 : (e - prev) / Math.abs(prev);
    r[i] = x;
    prev = e;
    sum += x;
  }
  const mean = sum / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (r[i]! - mean) * (r[i]! - mean);
  const sd = Math.sqrt(ss / (n - 1));
  if (!(sd > 0)) return 0;
  return (mean / sd) * Math.sqrt(TRADING_DAYS);
}

/**
 * Annualized return, compounded (backtesting.py's `Return (Ann.) [%]`): g = the geometric mean of the
 * daily returns, (1 + g)^252 - 1. The daily returns chain from the capital to the last session
 * close, so their product is E_last / capital and this is (E_last / capital)^(252 / days) - 1.
 * Never below -1: an equity at or below 0 at any session close is a ruined account (-1), where
 * backtesting.py's geometric mean gives up and reports 0. 0 without days.
 */
export function annualReturnOf(values: ArrayLike<number>, at: Int32Array | null, capital: number): number {
  const n = at !== null ? at.length : values.length;
  if (n === 0) return 0;
  for (let i = 0; i < n; i++) if (!(values[at !== null ? at[i]! : i]! > 0)) return -1;
  const last = values[at !== null ? at[n - 1]! : n - 1]!;
  const a = Math.pow(last / capital, TRADING_DAYS / n) - 1;
  return a > ANNUAL_RETURN_CAP ? ANNUAL_RETURN_CAP : a;
}

export function computeMetrics(run: RawRun, cs: Candles): Metrics {
  const { trades, equity, capital } = run;
  const n = trades.n;
  let wins = 0;
  let losses = 0;
  let gp = 0;
  let gl = 0;
  let best = 0;
  let worst = 0;
  for (let k = 0; k < n; k++) {
    const p = trades.pnl[k]!;
    if (p > 0) {
      wins++;
      gp += p;
    } else if (p < 0) {
      losses++;
      gl -= p;
    }
    if (k === 0 || p > best) best = p;
    if (k === 0 || p < worst) worst = p;
  }
  const net = gp - gl;
  let mean = 0;
  let sd = 0;
  if (n > 0) {
    let s = 0;
    for (let k = 0; k < n; k++) s += trades.pnl[k]!;
    mean = s / n;
    if (n > 1) {
      let ss = 0;
      for (let k = 0; k < n; k++) ss += (trades.pnl[k]! - mean) ** 2;
      sd = Math.sqrt(ss / (n - 1));
    }
  }
  // drawdown on bar-by-bar equity, the peak starting at the capital: 1 - e / peak and peak - e only
  // grow as e falls (IEEE rounding is monotonic), so each peak's deepest point decides for its stretch
  let peak = capital;
  let low = capital;
  let mdd = 0;
  let mddUsd = 0;
  for (let i = 0; i < equity.length; i++) {
    const e = equity[i]!;
    if (e > peak) {
      const dd = 1 - low / peak;
      if (dd > mdd) mdd = dd;
      if (peak - low > mddUsd) mddUsd = peak - low;
      peak = e;
      low = e;
    } else if (e < low) low = e;
  }
  const dd = 1 - low / peak;
  if (dd > mdd) mdd = dd;
  if (peak - low > mddUsd) mddUsd = peak - low;
  const closeAt = sessionCloseIndices(cs, run.range.tradeFrom, run.range.to);
  const final = equity.length ? equity[equity.length - 1]! : capital;
  const totalReturn = final / capital - 1;
  const days = closeAt.length;
  return {
    trades: n,
    wins,
    losses,
    win_rate: n ? ratio(wins / n) : 0,
    profit_factor: gl > 0 ? ratio(Math.min(gp / gl, PROFIT_FACTOR_CAP)) : gp > 0 ? PROFIT_FACTOR_CAP : 0,
    net_profit: money(net),
    gross_profit: money(gp),
    gross_loss: money(gl),
    total_return: ratio(totalReturn),
    annual_return: ratio(annualReturnOf(equity, closeAt, capital)),
    sharpe: ratio(sharpeAt(equity, closeAt, capital)),
    max_drawdown: ratio(mdd),
    max_drawdown_usd: money(mddUsd),
    exposure: equity.length ? ratio(run.exposedBars / equity.length) : 0,
    sqn: sd > 0 ? ratio((Math.sqrt(n) * mean) / sd) : 0,
    avg_trade: money(mean),
    best_trade: money(best),
    worst_trade: money(worst),
    commission: money(run.commission),
    final_equity: money(final),
    bars: equity.length,
    days,
    risk_stops: run.riskStops,
  };
}

/** Profit and loss per calendar month of the trading day (UTC). */
export function monthlyPerformance(run: RawRun, cs: Candles): MonthRow[] {
  const { tradeFrom, to } = run.range;
  const rows: MonthRow[] = [];
  let start = run.capital;
  let month = '';
  let lastSession = -1;
  let row: MonthRow | undefined;
  for (let i = tradeFrom; i < to; i++) {
    const s = cs.session[i]!;
    if (s !== lastSession) {
      lastSession = s;
      const m = sessionMonth(s);
      if (m !== month) {
        month = m;
        row = { month: m, pnl: 0, return: 0, trades: 0 };
        rows.push(row);
        if (i > tradeFrom) start = run.equity[i - 1 - tradeFrom]!;
        (row as MonthRow & { start?: number }).start = start;
      }
    }
    const e = run.equity[i - tradeFrom]!;
    const r = row as MonthRow & { start: number };
    r.pnl = e - r.start;
  }
  // trades counted in the month they closed
  const monthOfBar = (bar: number) => sessionMonth(cs.session[bar]!);
  const byMonth = new Map(rows.map((r) => [r.month, r]));
  for (let k = 0; k < run.trades.n; k++) {
    const r = byMonth.get(monthOfBar(run.trades.exitBar[k]!));
    if (r) r.trades++;
  }
  return rows.map((r) => {
    const s = (r as MonthRow & { start: number }).start;
    return { month: r.month, pnl: money(r.pnl), return: ratio(s > 0 ? r.pnl / s : 0), trades: r.trades };
  });
}

/**
 * The equity curve for transport: at most `points` points, each the equity at the close of the
 * last bar of its bucket (equal-size buckets of bars; the final bar is always the last point).
 */
export function equityCurve(run: RawRun, cs: Candles, points: number): { t: number; equity: number }[] {
  const len = run.equity.length;
  if (len === 0) return [];
  const out: { t: number; equity: number }[] = [];
  const buckets = Math.min(points, len);
  for (let b = 1; b <= buckets; b++) {
    const i = Math.floor((b * len) / buckets) - 1;
    out.push({ t: cs.t[run.range.tradeFrom + i]!, equity: money(run.equity[i]!) });
  }
  return out;
}

const price = (x: number) => Math.round(x * 1e10) / 1e10;

export function tradeRows(run: RawRun, cs: Candles, contracts: number, limit: number): TradeRow[] {
  const t = run.trades;
  const rows: TradeRow[] = [];
  for (let k = 0; k < Math.min(t.n, limit); k++) {
    rows.push({
      side: t.dir[k] === 1 ? 'long' : 'short',
      entry_time: new Date(cs.t[t.entryBar[k]!]!).toISOString(),
      exit_time: new Date(cs.t[t.exitBar[k]!]!).toISOString(),
      entry_price: price(t.entryPrice[k]!),
      exit_price: price(t.exitPrice[k]!),
      contracts,
      pnl: money(t.pnl[k]!),
      reason: REASONS[t.reason[k]!]!,
    });
  }
  return rows;
}
