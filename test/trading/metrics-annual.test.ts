import { describe, expect, it } from 'vitest';
import type { Candles } from '../../src/trading/candles.js';
import type { RawRun } from '../../src/trading/engine.js';
import { ANNUAL_RETURN_CAP, annualReturnOf, computeMetrics } from '../../src/trading/metrics.js';

/**
 * The annual return is compounded (backtesting.py, backtesting/_stats.py: `annualized_return =
 * (1 + gmean_day_return)**annual_trading_days - 1` with `geometric_mean` = exp(mean(log(1 + r))) - 1
 * over the daily returns, 252 trading days): it never goes below -100%, where the former linear
 * scaling (total return x 252 / days) did.
 */

/** Candles with one bar per session: only bar times and sessions are read by the metrics. */
function sessions(n: number): Candles {
  return {
    session: Int32Array.from({ length: n }, (_, i) => i),
    t: Float64Array.from({ length: n }, (_, i) => Date.UTC(2024, 0, 1) + i * 86_400_000),
    n,
  } as unknown as Candles;
}
function run(equity: number[], capital = 1000): RawRun {
  return {
    trades: { n: 0, dir: [], entryBar: [], exitBar: [], entryPrice: [], exitPrice: [], pnl: [], reason: [] },
    equity: Float64Array.from(equity),
    exposedBars: 0,
    commission: 0,
    riskStops: 0,
    capital,
    range: { from: 0, tradeFrom: 0, to: equity.length },
  };
}
/** A path of `days` session closes from `capital` to `final`, every step the same factor. */
const path = (days: number, capital: number, final: number) => Array.from({ length: days }, (_, i) => capital * (final / capital) ** ((i + 1) / days));

/** backtesting.py's definition restated: the geometric mean of the daily returns, compounded over 252 days. */
function gmeanAnnual(closes: number[], capital: number): number {
  let logSum = 0;
  let prev = capital;
  for (const c of closes) {
    logSum += Math.log(c / prev);
    prev = c;
  }
  const g = Math.exp(logSum / closes.length) - 1;
  return (1 + g) ** 252 - 1;
}

describe('annual return (compounded)', () => {
  it('figures checked by hand', () => {
    // 126 sessions (half a trading year) ending at 1,210 from 1,000: 1.21^2 - 1 = 0.4641
    expect(computeMetrics(run(path(126, 1000, 1210)), sessions(126)).annual_return).toBe(0.4641);
    // ending at 810: 0.81^2 - 1 = -0.3439 (the linear form said -0.19 x 2 = -0.38)
    expect(computeMetrics(run(path(126, 1000, 810)), sessions(126)).annual_return).toBe(-0.3439);
    // a full year of 252 sessions: the total return itself
    expect(computeMetrics(run(path(252, 1000, 1100)), sessions(252)).annual_return).toBe(0.1);
    // -50% in 21 sessions: 0.5^12 - 1 = -0.999756 (linear: -0.5 x 12 = -6, i.e. -600%)
    expect(computeMetrics(run(path(21, 1000, 500)), sessions(21)).annual_return).toBe(-0.999756);
  });

  it('is the geometric mean of the daily returns compounded over 252 days, on an uneven path', () => {
    const closes = [1010, 990, 1030, 1025, 1001, 1040, 1100, 1080];
    const m = computeMetrics(run(closes), sessions(closes.length));
    expect(m.annual_return).toBeCloseTo(gmeanAnnual(closes, 1000), 5);
    // and not the linear scaling
    expect(m.annual_return).not.toBeCloseTo((0.08 * 252) / 8, 1);
  });

  it('a losing series never goes below -100%, however steep', () => {
    // deterministic pseudo-random losing paths (LCG), from a small loss to a near wipe-out over few days
    let x = 12345;
    const u = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
    for (let k = 0; k < 200; k++) {
      const days = 1 + Math.floor(u() * 40);
      const closes: number[] = [];
      let e = 1000;
      for (let d = 0; d < days; d++) closes.push((e *= 1 - u() * 0.3));
      const a = computeMetrics(run(closes), sessions(days)).annual_return;
      expect(a).toBeGreaterThanOrEqual(-1);
      expect(a).toBeLessThan(0);
    }
  });

  it('equity at or below zero at a session close is -100%, even if it comes back', () => {
    expect(computeMetrics(run([500, -200]), sessions(2)).annual_return).toBe(-1);
    expect(computeMetrics(run([0, 10]), sessions(2)).annual_return).toBe(-1);
    expect(computeMetrics(run([500, -50, 1200]), sessions(3)).annual_return).toBe(-1);
  });

  it('no day: 0; a gain too fast to compound finitely is capped', () => {
    expect(annualReturnOf([], null, 1000)).toBe(0);
    // x100 in one day: 100^252 overflows to Infinity; JSON needs a finite number
    const a = computeMetrics(run([100_000]), sessions(1)).annual_return;
    expect(a).toBe(ANNUAL_RETURN_CAP);
    expect(Number.isFinite(a)).toBe(true);
  });
});
