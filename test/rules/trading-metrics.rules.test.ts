import { describe, expect, it } from 'vitest';
import type { Candles } from '../../src/trading/candles.js';
import type { RawRun, TradeLog } from '../../src/trading/engine.js';
import { PROFIT_FACTOR_CAP, TRADING_DAYS, computeMetrics, equityCurve, monthlyPerformance, sessionCloseIndices, sharpeOf, tradeRows } from '../../src/trading/metrics.js';

// Result metrics of a backtest (doc2 "Result content": win rate, profit factor, Sharpe ratio,
// maximum drawdown, monthly performance, equity curve), each on a case where a wrong formula
// gives another answer: several days, several months, several trades.

/** Candles with only what the metrics read: bar times and session (trading day) indexes. */
function candles(sessions: number[]): Candles {
  return {
    session: Int32Array.from(sessions),
    t: Float64Array.from(sessions.map((_, i) => Date.UTC(2024, 0, 1) + i * 3_600_000)),
    n: sessions.length,
  } as unknown as Candles;
}

function trades(rows: { pnl: number; exitBar?: number; entryBar?: number; dir?: number; reason?: number; entryPrice?: number; exitPrice?: number }[]): TradeLog {
  return {
    n: rows.length,
    dir: rows.map((r) => r.dir ?? 1),
    entryBar: rows.map((r) => r.entryBar ?? 0),
    exitBar: rows.map((r) => r.exitBar ?? 0),
    entryPrice: rows.map((r) => r.entryPrice ?? 100),
    exitPrice: rows.map((r) => r.exitPrice ?? 101),
    pnl: rows.map((r) => r.pnl),
    reason: rows.map((r) => r.reason ?? 0),
  };
}

function run(equity: number[], opts: Partial<RawRun> & { tradeFrom?: number } = {}): RawRun {
  const tradeFrom = opts.tradeFrom ?? 0;
  return {
    trades: opts.trades ?? trades([]),
    equity: Float64Array.from(equity),
    exposedBars: opts.exposedBars ?? 0,
    commission: opts.commission ?? 0,
    riskStops: opts.riskStops ?? 0,
    capital: opts.capital ?? 1000,
    range: { from: 0, tradeFrom, to: tradeFrom + equity.length },
  };
}

/** The definition: mean / std(ddof = 1) of daily returns against |previous|, times sqrt(252). */
function referenceSharpe(closes: number[], capital: number): number {
  const r: number[] = [];
  let prev = capital;
  for (const c of closes) {
    r.push(prev === 0 ? 0 : (c - prev) / Math.abs(prev));
    prev = c;
  }
  const mean = r.reduce((a, b) => a + b, 0) / r.length;
  const variance = r.reduce((a, b) => a + (b - mean) ** 2, 0) / (r.length - 1);
  return (mean / Math.sqrt(variance)) * Math.sqrt(252);
}

describe('Sharpe ratio', () => {
  it('252 trading days a year', () => {
    expect(TRADING_DAYS).toBe(252);
  });
  it('sample deviation over several days (n - 1 = 3, 4)', () => {
    const closes4 = [1010, 990, 1030, 1025];
    expect(sharpeOf(closes4, 1000)).toBeCloseTo(referenceSharpe(closes4, 1000), 10);
    const closes5 = [1000, 1100, 1050, 1200, 1150];
    expect(sharpeOf(closes5, 1000)).toBeCloseTo(referenceSharpe(closes5, 1000), 10);
    // returns 0.01, -0.0198020, 0.0404040, -0.0048544 (Python statistics.stdev gives the same)
    expect(sharpeOf(closes4, 1000)).toBeCloseTo(3.975025, 5);
  });
  it('fewer than 2 days, or no deviation: 0; 2 days are enough', () => {
    expect(sharpeOf([], 1000)).toBe(0);
    expect(sharpeOf([1100], 1000)).toBe(0);
    expect(sharpeOf([1100, 1210], 1000)).toBe(0); // +10% twice: no deviation
    expect(sharpeOf([1100, 1000], 1000)).toBeCloseTo(referenceSharpe([1100, 1000], 1000), 10);
    expect(sharpeOf([1100, 1000], 1000)).not.toBe(0);
  });
  it('returns are taken against |previous| equity, and 0 after exactly 0', () => {
    const neg = [500, -250, -500, -400];
    expect(sharpeOf(neg, 1000)).toBeCloseTo(referenceSharpe(neg, 1000), 10);
    const zero = [0, 100, 50];
    expect(sharpeOf(zero, 1000)).toBeCloseTo(referenceSharpe(zero, 1000), 10);
  });
});

describe('computeMetrics', () => {
  it('counts, win rate, profit factor, averages, best and worst over several trades', () => {
    const log = trades([{ pnl: 100 }, { pnl: -50 }, { pnl: 30 }, { pnl: -20 }, { pnl: 0 }]);
    const m = computeMetrics(run([1000, 1060], { trades: log, commission: 12.345, riskStops: 2, exposedBars: 1 }), candles([0, 1]));
    expect(m).toMatchObject({
      trades: 5,
      wins: 2,
      losses: 2,
      win_rate: 0.4,
      profit_factor: 1.857143,
      net_profit: 60,
      gross_profit: 130,
      gross_loss: 70,
      avg_trade: 12,
      best_trade: 100,
      worst_trade: -50,
      commission: 12.35,
      risk_stops: 2,
      exposure: 0.5,
      bars: 2,
      days: 2,
      final_equity: 1060,
      total_return: 0.06,
      annual_return: 1542.615118, // compounded: 1.06^(252 / 2 days) - 1
    });
    // SQN = sqrt(n) * mean / sd(ddof = 1) of the trade results
    const pnl = [100, -50, 30, -20, 0];
    const sd = Math.sqrt(pnl.reduce((a, p) => a + (p - 12) ** 2, 0) / 4);
    expect(m.sqn).toBeCloseTo((Math.sqrt(5) * 12) / sd, 5);
  });

  it('best and worst when all trades lose or all win', () => {
    const losers = computeMetrics(run([900], { trades: trades([{ pnl: -30 }, { pnl: -70 }]) }), candles([0]));
    expect(losers).toMatchObject({ best_trade: -30, worst_trade: -70, wins: 0, losses: 2, profit_factor: 0, win_rate: 0 });
    const winners = computeMetrics(run([1100], { trades: trades([{ pnl: 30 }, { pnl: 70 }]) }), candles([0]));
    expect(winners).toMatchObject({ best_trade: 70, worst_trade: 30, profit_factor: PROFIT_FACTOR_CAP, gross_loss: 0 });
  });

  it('the profit factor is capped at 100: below, at and above the cap', () => {
    expect(PROFIT_FACTOR_CAP).toBe(100);
    const pf = (win: number, loss: number) => computeMetrics(run([1000], { trades: trades([{ pnl: win }, { pnl: -loss }]) }), candles([0])).profit_factor;
    expect(pf(999, 10)).toBe(99.9);
    expect(pf(1000, 10)).toBe(100);
    expect(pf(1001, 10)).toBe(100);
  });

  it('no trades: zeros, and a single trade has no SQN', () => {
    const m = computeMetrics(run([]), candles([]));
    expect(m).toMatchObject({ trades: 0, win_rate: 0, profit_factor: 0, avg_trade: 0, sqn: 0, best_trade: 0, worst_trade: 0, final_equity: 1000, exposure: 0, days: 0, annual_return: 0, sharpe: 0 });
    const one = computeMetrics(run([1010], { trades: trades([{ pnl: 10 }]) }), candles([0]));
    expect(one).toMatchObject({ sqn: 0, avg_trade: 10, trades: 1 });
  });

  it('maximum drawdown from the running peak (starting at the capital), not the first or last one', () => {
    const m = computeMetrics(run([1200, 900, 1300, 650, 700]), candles([0, 0, 0, 0, 0]));
    expect(m.max_drawdown).toBe(0.5);
    expect(m.max_drawdown_usd).toBe(650);
    const first = computeMetrics(run([900, 950]), candles([0, 0]));
    expect(first.max_drawdown).toBe(0.1);
    expect(first.max_drawdown_usd).toBe(100);
    // the largest drop in money is not the largest in percent
    const two = computeMetrics(run([2000, 1500, 1600, 100, 3000, 2100]), candles([0, 0, 0, 0, 0, 0]));
    expect(two.max_drawdown).toBe(0.95);
    expect(two.max_drawdown_usd).toBe(1900);
    const mixed = computeMetrics(run([1000, 4000, 3000, 500, 450]), candles([0, 0, 0, 0, 0]));
    expect(mixed.max_drawdown_usd).toBe(3550);
    // two stretches, each ended by a new peak: the deeper first one stays the maximum
    const later = computeMetrics(run([500, 1100, 1000, 1200]), candles([0, 0, 0, 0]));
    expect(later.max_drawdown).toBe(0.5);
    expect(later.max_drawdown_usd).toBe(500);
    const up = computeMetrics(run([1000, 1100, 1200]), candles([0, 0, 0]));
    expect(up.max_drawdown).toBe(0);
    expect(up.max_drawdown_usd).toBe(0);
  });

  it('days are sessions: the Sharpe ratio reads the equity at each session last bar', () => {
    const equity = [1005, 1010, 990, 980, 1030, 1031, 1025];
    const m = computeMetrics(run(equity), candles([0, 0, 1, 1, 2, 2, 3]));
    expect(m.days).toBe(4);
    expect(m.sharpe).toBeCloseTo(referenceSharpe([1010, 980, 1031, 1025], 1000), 5);
    expect(m.annual_return).toBe(Math.round((1.025 ** (252 / 4) - 1) * 1e6) / 1e6); // compounded
  });

  it('only bars from tradeFrom count as days', () => {
    const r = run([1000, 1020, 1010], { tradeFrom: 2 });
    const m = computeMetrics(r, candles([0, 1, 2, 3, 3]));
    expect(m.days).toBe(2);
    expect(m.sharpe).toBeCloseTo(referenceSharpe([1000, 1010], 1000), 5);
  });

  it('the run range, not the candles, ends the days: the last bar of the run always closes a day', () => {
    // candles go on past the run; bar 1 shares its session with bar 2, which the run does not reach
    const m = computeMetrics(run([1010, 1020]), candles([0, 1, 1, 2]));
    expect(m.days).toBe(2);
    expect(m.sharpe).toBeCloseTo(referenceSharpe([1010, 1020], 1000), 5);
  });

  it('a ratio that rounds to -0 is 0', () => {
    const m = computeMetrics(run([1000 - 1e-7]), candles([0]));
    expect(Object.is(m.total_return, 0)).toBe(true);
  });

  it('money to cents, -0 printed as 0', () => {
    const m = computeMetrics(run([999.999], { trades: trades([{ pnl: -0.001 }]) }), candles([0]));
    expect(Object.is(m.net_profit, 0)).toBe(true);
    expect(Object.is(m.avg_trade, 0)).toBe(true);
    expect(m.final_equity).toBe(1000);
  });
});

describe('monthly performance', () => {
  // Session 0 is Monday 2024-01-01; January 2024 has 23 trading days, so session 23 is 1 February
  // and session 44 is 1 March.
  it('each month starts from the equity at the end of the previous one', () => {
    const sessions = [0, 0, 22, 22, 23, 23, 43, 44, 44];
    const equity = [1010, 1020, 1050, 1100, 1080, 1090, 1210, 1200, 1150];
    const log = trades([
      { pnl: 5, exitBar: 1 },
      { pnl: 6, exitBar: 3 },
      { pnl: 7, exitBar: 4 },
      { pnl: 8, exitBar: 8 },
      { pnl: 9, exitBar: 7 },
    ]);
    const rows = monthlyPerformance(run(equity, { trades: log }), candles(sessions));
    expect(rows).toEqual([
      { month: '2024-01', pnl: 100, return: 0.1, trades: 2 },
      { month: '2024-02', pnl: 110, return: 0.1, trades: 1 },
      { month: '2024-03', pnl: -60, return: -0.049587, trades: 2 },
    ]);
  });

  it('measures from tradeFrom: warm-up bars neither count nor start a month', () => {
    const sessions = [20, 21, 22, 23, 24];
    const r = run([1100, 1200, 1300], { tradeFrom: 2 });
    expect(monthlyPerformance(r, candles(sessions))).toEqual([
      { month: '2024-01', pnl: 100, return: 0.1, trades: 0 },
      { month: '2024-02', pnl: 200, return: 0.181818, trades: 0 },
    ]);
  });

  it('whatever session the run starts at; a trade closed during the warm-up in an earlier month is not counted', () => {
    expect(monthlyPerformance(run([1100, 1200]), candles([1, 2]))).toEqual([{ month: '2024-01', pnl: 200, return: 0.2, trades: 0 }]);
    const r = run([1100], { tradeFrom: 1, trades: trades([{ pnl: 1, exitBar: 0 }, { pnl: 2, exitBar: 1 }]) });
    expect(monthlyPerformance(r, candles([-1, 0]))).toEqual([{ month: '2024-01', pnl: 100, return: 0.1, trades: 1 }]);
  });

  it('a month starting at zero or negative equity has return 0', () => {
    const rows = monthlyPerformance(run([10, 0, 5, 7]), candles([22, 22, 23, 23]));
    expect(rows[1]).toEqual({ month: '2024-02', pnl: 7, return: 0, trades: 0 });
    const neg = monthlyPerformance(run([-10, -20]), candles([22, 23]));
    expect(neg[1]).toEqual({ month: '2024-02', pnl: -10, return: 0, trades: 0 });
  });
});

describe('equity curve and trade rows', () => {
  it('at most `points` points, each the last bar of an equal bucket, the final bar last', () => {
    const equity = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((x) => 1000 + x);
    const cs = candles(equity.map(() => 0));
    const curve = equityCurve(run(equity), cs, 3);
    expect(curve.map((p) => p.equity)).toEqual([1003, 1006, 1010]);
    expect(curve.map((p) => p.t)).toEqual([2, 5, 9].map((i) => cs.t[i]));
    expect(equityCurve(run(equity), cs, 10).map((p) => p.equity)).toEqual(equity);
    expect(equityCurve(run(equity), cs, 11)).toHaveLength(10);
    expect(equityCurve(run(equity), cs, 1)).toEqual([{ t: cs.t[9], equity: 1010 }]);
    expect(equityCurve(run([]), cs, 5)).toEqual([]);
    const shifted = run([1, 2].map((x) => 1000 + x), { tradeFrom: 3 });
    expect(equityCurve(shifted, candles([0, 0, 0, 0, 0]), 2).map((p) => p.t)).toEqual([cs.t[3], cs.t[4]]);
  });

  it('trade rows: side, times, rounded prices and money, exit reason, at most `limit`', () => {
    const cs = candles([0, 0, 0, 0]);
    const log = trades([
      { pnl: 12.345, dir: 1, entryBar: 0, exitBar: 2, reason: 1, entryPrice: 100.123456789012, exitPrice: 101 },
      { pnl: -3, dir: -1, entryBar: 2, exitBar: 3, reason: 4 },
    ]);
    const rows = tradeRows(run([1000], { trades: log }), cs, 2, 10);
    expect(rows).toEqual([
      { side: 'long', entry_time: new Date(cs.t[0]!).toISOString(), exit_time: new Date(cs.t[2]!).toISOString(), entry_price: 100.123456789, exit_price: 101, contracts: 2, pnl: 12.35, reason: 'stop_loss' },
      { side: 'short', entry_time: new Date(cs.t[2]!).toISOString(), exit_time: new Date(cs.t[3]!).toISOString(), entry_price: 100, exit_price: 101, contracts: 2, pnl: -3, reason: 'end' },
    ]);
    expect(tradeRows(run([1000], { trades: log }), cs, 1, 1)).toHaveLength(1);
    expect(tradeRows(run([1000], { trades: log }), cs, 1, 0)).toEqual([]);
  });
});

describe('the session closes of a range', () => {
  it('are the last bar of each trading day inside the range, counted from its first bar, for each range apart', () => {
    const cs = candles([0, 0, 1, 1, 1, 2, 3, 3]);
    expect(Array.from(sessionCloseIndices(cs, 0, 8))).toEqual([1, 4, 5, 7]);
    // the same candles, another range: not the cached answer of the first
    expect(Array.from(sessionCloseIndices(cs, 3, 8))).toEqual([1, 2, 4]);
    expect(Array.from(sessionCloseIndices(cs, 0, 4))).toEqual([1, 3]);
    expect(Array.from(sessionCloseIndices(cs, 2, 2))).toEqual([]);
  });
});
