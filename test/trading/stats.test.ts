import { describe, expect, it } from 'vitest';
import { runStrategy } from '../../src/trading/analyses.js';
import { candlesFromRows, generateCandles, type Candles } from '../../src/trading/candles.js';
import { Engine, LONG, NONE, settingsSchema, SHORT, type RawRun } from '../../src/trading/engine.js';
import { computeMetrics } from '../../src/trading/metrics.js';
import { computeStats, exitsByReason, type Stats } from '../../src/trading/stats.js';
import { SYMBOL_SPECS } from '../../src/trading/symbols.js';

/**
 * The report's statistics, each against its formula in backtesting.py's backtesting/_stats.py
 * (`compute_stats`, `compute_drawdown_duration_peaks`, `geometric_mean`) on the same trades, and
 * freqtrade's exit reason table. The formulas are restated here in backtesting.py's own shape
 * (whole arrays, the drawdown periods from the indexes where dd == 0), not in the engine's.
 */

const r6 = (x: number) => Math.round(x * 1e6) / 1e6 + 0;

// The hand-computed backtest of engine.test.ts: eight ES bars ($50 a point), two sessions.
//   trades: long 100.25 -> 103.25 take_profit +146 (bars 1-2), short 102.75 -> 105.75 stop_loss -154
//   (bars 3-4), long 105.25 -> 103 stop_loss -116.5 (bar 5), long 104.25 -> 105 end +33.5 (bars 6-7)
const rows = [
  { o: 100, h: 101, l: 99, c: 100 },
  { o: 100, h: 101, l: 99.5, c: 100.5 },
  { o: 101, h: 104, l: 100.5, c: 103 },
  { o: 103, h: 103.5, l: 102, c: 102.5 },
  { o: 105.5, h: 106, l: 105, c: 105.5, session: 1 },
  { o: 105, h: 108.5, l: 103, c: 104, session: 1 },
  { o: 104, h: 105, l: 103.5, c: 104.5, session: 1 },
  { o: 104.5, h: 105, l: 104, c: 105, session: 1 },
];
const settings = settingsSchema.parse({ capital: 10_000, contracts: 1, slippage_ticks: 1, commission: 2, stop_loss_points: 2, take_profit_points: 3 });

describe('statistics of a hand-computed backtest', () => {
  const cs = candlesFromRows('ES', rows);
  const run = new Engine(cs, settings).runActions(Int8Array.from([LONG, NONE, SHORT, NONE, LONG, LONG, NONE, NONE]));
  const s = computeStats(run, cs, 1);
  const MIN = 60_000;
  const DAY = 86_400_000;

  it('the run is the one of engine.test.ts', () => {
    expect(Array.from(run.equity)).toEqual([10_000, 10_010.5, 10_146, 10_156.5, 9992, 9875.5, 9886, 9909]);
    expect(run.trades.pnl).toEqual([146, -154, -116.5, 33.5]);
  });

  it('start, end, duration, exposure, equity, returns', () => {
    // Start = index[0], End = index[-1], Duration = End - Start: session 0 opens 2023-12-31 23:00 UTC,
    // the last bar is the 4th minute of session 1 (2024-01-01 23:03)
    expect(s.start).toBe('2023-12-31T23:00:00.000Z');
    expect(s.end).toBe('2024-01-01T23:03:00.000Z');
    expect(s.duration_ms).toBe(DAY + 3 * MIN);
    // Exposure Time = mean of have_position[EntryBar:ExitBar + 1] = 1: bars 1-2, 3-4, 5, 6-7 -> 7 of 8
    expect(s.exposure_time).toBe(0.875);
    // Equity Final = equity[-1]; Equity Peak = equity.max()
    expect(s.equity_final).toBe(9909);
    expect(s.equity_peak).toBe(10_156.5);
    // Return = (equity[-1] - equity[0]) / equity[0] (equity[0] = the capital)
    expect(s.return).toBe(-0.0091);
    // Buy & Hold Return = (c[-1] - c[0]) / c[0] = 105 / 100 - 1
    expect(s.buy_and_hold_return).toBe(0.05);
  });

  it('annual return, volatility, Sharpe, Sortino, Calmar', () => {
    // day returns: 10,156.5 / 10,000 - 1 and 9,909 / 10,156.5 - 1
    const r = [0.01565, 9909 / 10_156.5 - 1];
    // geometric_mean = exp(sum(log(1 + r)) / n) - 1; Return (Ann.) = (1 + g)^252 - 1
    const g = Math.exp((Math.log(1 + r[0]!) + Math.log(1 + r[1]!)) / 2) - 1;
    const ann = (1 + g) ** 252 - 1;
    expect(s.annual_return).toBe(-0.683948); // = 0.9909^126 - 1, checked by hand
    expect(s.annual_return).toBe(r6(ann));
    // Volatility (Ann.) = sqrt((var(r, ddof=1) + (1 + g)^2)^252 - (1 + g)^(2 x 252))
    const mean = (r[0]! + r[1]!) / 2;
    const variance = (r[0]! - mean) ** 2 + (r[1]! - mean) ** 2; // / (2 - 1)
    const vol = Math.sqrt((variance + (1 + g) ** 2) ** 252 - (1 + g) ** 504);
    expect(s.annual_volatility).toBe(r6(vol));
    // Sharpe Ratio = (Return (Ann.) - rf) / Volatility (Ann.), rf = 0
    expect(s.sharpe_ratio).toBe(r6(ann / vol));
    // Sortino Ratio = Return (Ann.) / (sqrt(mean(clip(r, -inf, 0)^2)) x sqrt(252))
    expect(s.sortino_ratio).toBe(r6(ann / (Math.sqrt((0 + r[1]! ** 2) / 2) * Math.sqrt(252))));
    // Calmar Ratio = Return (Ann.) / Max. Drawdown
    expect(s.calmar_ratio).toBe(r6(ann / (1 - 9875.5 / 10_156.5)));
  });

  it('drawdown: maximum, average and their durations', () => {
    // dd = 1 - equity / cummax(equity); one drawdown period, from the peak 10,156.5 (bar 3,
    // 2023-12-31 23:03) to the last bar (2024-01-01 23:03), unrecovered: 24 h, depth 1 - 9,875.5 / 10,156.5
    expect(s.max_drawdown).toBe(0.027667);
    expect(s.avg_drawdown).toBe(0.027667);
    expect(s.max_drawdown_duration_ms).toBe(DAY);
    expect(s.avg_drawdown_duration_ms).toBe(DAY);
    expect(s.max_drawdown).toBe(computeMetrics(run, cs).max_drawdown);
  });

  it('trades: count, win rate, best, worst, average, durations, profit factor, expectancy, SQN', () => {
    // ReturnPct of a trade: net P&L / (entry price x $50 x 1 contract)
    const ret = [146 / (100.25 * 50), -154 / (102.75 * 50), -116.5 / (105.25 * 50), 33.5 / (104.25 * 50)];
    expect(s.trades).toBe(4);
    expect(s.win_rate).toBe(0.5); // (pl > 0).mean()
    expect(s.best_trade_return).toBe(r6(ret[0]!)); // returns.max() = 0.029127
    expect(s.best_trade_return).toBe(0.029127);
    expect(s.worst_trade_return).toBe(r6(ret[1]!)); // returns.min() = -0.029976
    expect(s.worst_trade_return).toBe(-0.029976);
    // Avg. Trade = geometric_mean(returns)
    expect(s.avg_trade_return).toBe(r6(Math.exp(ret.reduce((a, x) => a + Math.log(1 + x), 0) / 4) - 1));
    // Duration = ExitTime - EntryTime: 1 min, 24 h - 3 min (23:03 to 23:00 the next evening), 0, 1 min
    expect(s.max_trade_duration_ms).toBe(DAY - 3 * MIN);
    expect(s.avg_trade_duration_ms).toBe((MIN + DAY - 3 * MIN + 0 + MIN) / 4);
    // Profit Factor = returns[returns > 0].sum() / |returns[returns < 0].sum()|
    expect(s.return_profit_factor).toBe(r6((ret[0]! + ret[3]!) / -(ret[1]! + ret[2]!)));
    // Expectancy = returns.mean()
    expect(s.expectancy).toBe(r6(ret.reduce((a, x) => a + x, 0) / 4));
    // SQN = sqrt(n) x pl.mean() / pl.std() (ddof 1)
    const pl = [146, -154, -116.5, 33.5];
    const m = pl.reduce((a, x) => a + x, 0) / 4;
    const sd = Math.sqrt(pl.reduce((a, x) => a + (x - m) ** 2, 0) / 3);
    expect(s.sqn).toBe(r6((2 * m) / sd));
  });

  it("exits by reason (freqtrade's table)", () => {
    const ex = exitsByReason(run, cs, 1);
    expect(ex.map((e) => e.reason)).toEqual(['signal', 'stop_loss', 'take_profit', 'risk', 'end']);
    const by = Object.fromEntries(ex.map((e) => [e.reason, e]));
    expect(by.signal).toEqual({ reason: 'signal', exits: 0, wins: 0, draws: 0, losses: 0, win_rate: null, avg_return: null, total_pnl: 0, total_return: 0 });
    expect(by.stop_loss).toMatchObject({ exits: 2, wins: 0, losses: 2, draws: 0, win_rate: 0, total_pnl: -270.5, total_return: -0.02705 });
    expect(by.stop_loss!.avg_return).toBe(r6((-154 / (102.75 * 50) + -116.5 / (105.25 * 50)) / 2));
    expect(by.take_profit).toMatchObject({ exits: 1, wins: 1, win_rate: 1, total_pnl: 146, total_return: 0.0146 });
    expect(by.end).toMatchObject({ exits: 1, wins: 1, total_pnl: 33.5 });
    expect(ex.reduce((a, e) => a + e.exits, 0)).toBe(4);
  });

  it('no trade: backtesting.py NaN figures are null, the rest finite', () => {
    const none = new Engine(cs, settings).runActions(new Int8Array(8));
    const z = computeStats(none, cs, 1);
    expect(z).toMatchObject({ trades: 0, win_rate: null, best_trade_return: null, worst_trade_return: null, avg_trade_return: null, sqn: null, expectancy: null, return_profit_factor: null, max_trade_duration_ms: null, avg_trade_duration_ms: null, exposure_time: 0, max_drawdown: 0, avg_drawdown: null, max_drawdown_duration_ms: null, calmar_ratio: null, annual_return: 0, return: 0, equity_final: 10_000 });
    // no deviation of the daily returns: volatility 0, Sharpe and Sortino undefined
    expect(z.annual_volatility).toBe(0);
    expect(z.sharpe_ratio).toBeNull();
    expect(z.sortino_ratio).toBeNull();
    expect(JSON.stringify(z)).not.toMatch(/NaN|Infinity/);
  });
});

// ---- the same formulas on real backtests -----------------------------------------------------------

/** backtesting.py's compute_stats restated over arrays, with the days being the sessions. */
function reference(run: RawRun, cs: Candles, contracts: number) {
  const { tradeFrom, to } = run.range;
  const E = [run.capital, ...Array.from(run.equity)];
  const T = [cs.t[tradeFrom]!, ...Array.from({ length: to - tradeFrom }, (_, i) => cs.t[tradeFrom + i]!)];
  const cummax: number[] = [];
  E.forEach((e, i) => cummax.push(Math.max(e, i ? cummax[i - 1]! : e)));
  const dd = E.map((e, i) => 1 - e / cummax[i]!);
  // compute_drawdown_duration_peaks: iloc = unique(r_[nonzero(dd == 0), len - 1]); keep iloc > prev + 1
  const iloc = [...new Set([...dd.flatMap((d, i) => (d === 0 ? [i] : [])), dd.length - 1])].sort((a, b) => a - b);
  const periods: { duration: number; peak: number }[] = [];
  for (let k = 1; k < iloc.length; k++) {
    const prev = iloc[k - 1]!;
    const cur = iloc[k]!;
    if (cur > prev + 1) periods.push({ duration: T[cur]! - T[prev]!, peak: Math.max(...dd.slice(prev, cur + 1)) });
  }
  // day returns: equity at each session's last bar, from the capital
  const closes: number[] = [];
  for (let i = tradeFrom; i < to; i++) if (i === to - 1 || cs.session[i + 1] !== cs.session[i]) closes.push(run.equity[i - tradeFrom]!);
  const r = closes.map((c, d) => c / (d ? closes[d - 1]! : run.capital) - 1);
  const g = Math.exp(r.reduce((a, x) => a + Math.log(1 + x), 0) / r.length) - 1;
  const ann = (1 + g) ** 252 - 1;
  const mr = r.reduce((a, x) => a + x, 0) / r.length;
  const variance = r.reduce((a, x) => a + (x - mr) ** 2, 0) / (r.length - 1);
  const vol = Math.sqrt((variance + (1 + g) ** 2) ** 252 - (1 + g) ** 504);
  const sortino = ann / (Math.sqrt(r.reduce((a, x) => a + Math.min(x, 0) ** 2, 0) / r.length) * Math.sqrt(252));
  const maxDd = Math.max(...dd);
  const t = run.trades;
  const pv = SYMBOL_SPECS[cs.symbol].pointValue;
  const pl = t.pnl.slice(0, t.n);
  const ret = pl.map((p, k) => p / (t.entryPrice[k]! * pv * contracts));
  const dur = pl.map((_, k) => cs.t[t.exitBar[k]!]! - cs.t[t.entryBar[k]!]!);
  const have = new Array<number>(to - tradeFrom).fill(0);
  for (let k = 0; k < t.n; k++) for (let i = t.entryBar[k]!; i <= t.exitBar[k]!; i++) have[i - tradeFrom] = 1;
  const plMean = pl.reduce((a, x) => a + x, 0) / pl.length;
  const plSd = Math.sqrt(pl.reduce((a, x) => a + (x - plMean) ** 2, 0) / (pl.length - 1));
  const sum = (xs: number[]) => xs.reduce((a, x) => a + x, 0);
  return {
    exposure_time: sum(have) / have.length,
    equity_final: E[E.length - 1]!,
    equity_peak: Math.max(...E),
    return: E[E.length - 1]! / E[0]! - 1,
    buy_and_hold_return: cs.c[to - 1]! / cs.c[tradeFrom]! - 1,
    annual_return: ann,
    annual_volatility: vol,
    sharpe_ratio: ann / vol,
    sortino_ratio: sortino,
    calmar_ratio: ann / maxDd,
    max_drawdown: maxDd,
    avg_drawdown: sum(periods.map((p) => p.peak)) / periods.length,
    max_drawdown_duration_ms: Math.max(...periods.map((p) => p.duration)),
    avg_drawdown_duration_ms: sum(periods.map((p) => p.duration)) / periods.length,
    trades: t.n,
    win_rate: pl.filter((p) => p > 0).length / pl.length,
    best_trade_return: Math.max(...ret),
    worst_trade_return: Math.min(...ret),
    avg_trade_return: Math.exp(sum(ret.map((x) => Math.log(1 + x))) / ret.length) - 1,
    max_trade_duration_ms: Math.max(...dur),
    avg_trade_duration_ms: sum(dur) / dur.length,
    return_profit_factor: sum(ret.filter((x) => x > 0)) / Math.abs(sum(ret.filter((x) => x < 0))),
    expectancy: sum(ret) / ret.length,
    sqn: (Math.sqrt(pl.length) * plMean) / plSd,
  };
}

describe('statistics of real backtests against the restated formulas', () => {
  const spec = { seed: 7, symbol: 'ES' as const, timeframe: '5m' as const, count: 6000 };
  const cs = generateCandles(spec);
  const cases: [string, 'ema_cross' | 'breakout' | 'mean_reversion', Record<string, number>, Record<string, unknown>][] = [
    ['ema_cross default', 'ema_cross', { fast: 9, slow: 21 }, {}],
    ['breakout pyramiding, 2 contracts', 'breakout', { lookback: 20 }, { max_positions: 2, contracts: 2, capital: 500_000 }],
    ['mean reversion without stops', 'mean_reversion', { period: 20, k: 2 }, { stop_loss_atr: 0, take_profit_atr: 0 }],
  ];
  for (const [name, strategy, params, set] of cases) {
    it(name, () => {
      const st = settingsSchema.parse(set);
      const run = runStrategy(cs, strategy, params, st);
      expect(run.trades.n).toBeGreaterThan(20);
      const s = computeStats(run, cs, st.contracts);
      const want = reference(run, cs, st.contracts);
      for (const [k, v] of Object.entries(want)) {
        const got = s[k as keyof Stats];
        expect(typeof got, k).toBe('number');
        if (k.endsWith('_ms')) expect(got, k).toBe(Math.round(v));
        else if (k.startsWith('equity_')) expect(got, k).toBe(Math.round(v * 100) / 100);
        else expect(got, k).toBe(r6(v));
      }
      // annual return (compounded) is the metrics' one; SQN and max drawdown too
      const m = computeMetrics(run, cs);
      expect(s.annual_return).toBe(m.annual_return);
      expect(s.sqn).toBe(m.sqn);
      expect(s.max_drawdown).toBe(m.max_drawdown);
      // the exit table adds up to the trades and their P&L
      const ex = exitsByReason(run, cs, st.contracts);
      expect(ex.reduce((a, e) => a + e.exits, 0)).toBe(run.trades.n);
      expect(ex.reduce((a, e) => a + e.total_pnl, 0)).toBeCloseTo(m.net_profit, 1);
      for (const e of ex) expect(e.wins + e.draws + e.losses).toBe(e.exits);
    });
  }

  it('a ruined account (equity below 0 at a session close): annual return -1, every figure finite or null', () => {
    const st = settingsSchema.parse({ max_positions: 3, contracts: 3, capital: 20_000 });
    const run = runStrategy(cs, 'breakout', { lookback: 20 }, st);
    expect(Math.min(...run.equity)).toBeLessThan(0);
    const s = computeStats(run, cs, st.contracts);
    expect(s.annual_return).toBe(-1);
    for (const [k, v] of Object.entries(s)) if (typeof v === 'number') expect(Number.isFinite(v), k).toBe(true);
  });
});

describe('volatility of a nearly flat series', () => {
  it('a difference of powers rounded below zero is 0, not NaN (null)', () => {
    // two days losing ~5e-8 each: var(r) ~ 6e-20, and (var + (1 + g)^2)^252 - (1 + g)^504 rounds to -6.6e-15
    const closes = [999.9999501465642, 999.9999006381756];
    const cs = {
      session: Int32Array.from([0, 1]),
      t: Float64Array.from([0, 1].map((i) => Date.UTC(2024, 0, 1) + i * 86_400_000)),
      c: Float64Array.from([1, 1]),
      n: 2,
      symbol: 'ES',
    } as unknown as Candles;
    const run: RawRun = {
      trades: { n: 0, dir: [], entryBar: [], exitBar: [], entryPrice: [], exitPrice: [], pnl: [], reason: [] },
      equity: Float64Array.from(closes),
      exposedBars: 0,
      commission: 0,
      riskStops: 0,
      capital: 1000,
      range: { from: 0, tradeFrom: 0, to: 2 },
    };
    const s = computeStats(run, cs, 1);
    expect(s.annual_volatility).toBe(0);
    expect(s.sharpe_ratio).toBeNull();
  });
});
