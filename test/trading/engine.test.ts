import { describe, expect, it } from 'vitest';
import { candlesFromRows } from '../../src/trading/candles.js';
import { Engine, EXIT, LONG, NONE, SHORT, settingsSchema, type FillEvent } from '../../src/trading/engine.js';
import { computeMetrics, equityCurve, monthlyPerformance, PROFIT_FACTOR_CAP, tradeRows } from '../../src/trading/metrics.js';
import { STRATEGY_DEFS } from '../../src/trading/strategies.js';

/**
 * A hand-computed backtest on eight ES bars (point value $50, tick 0.25). Settings: capital 10,000,
 * 1 contract, slippage 1 tick, commission $2 per contract per side, stop 2 points, target 3 points.
 *   bar 0 LONG  -> bar 1 fills at 100 + 0.25 = 100.25 (SL 98.25, TP 103.25)
 *   bar 2 high 104 reaches the target: exit 103.25 (no slippage on a limit): 3 x 50 - 4 = +146; SHORT
 *   bar 3 fills short at 103 - 0.25 = 102.75 (SL 104.75, TP 99.75)
 *   bar 4 (next session) opens 105.5, past the stop: exit at the open + slippage 105.75: -150 - 4 = -154; LONG
 *   bar 5 fills at 105.25 (SL 103.25, TP 108.25); the bar reaches both: the stop is taken at
 *         103.25 - 0.25 = 103: -112.5 - 4 = -116.5; LONG
 *   bar 6 fills at 104.25; bar 7 is the last: closed at its close 105 (no slippage): 37.5 - 4 = +33.5
 */
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
const actions = Int8Array.from([LONG, NONE, SHORT, NONE, LONG, LONG, NONE, NONE]);
const settings = settingsSchema.parse({
  capital: 10_000,
  contracts: 1,
  slippage_ticks: 1,
  commission: 2,
  stop_loss_points: 2,
  take_profit_points: 3,
});

describe('engine: a hand-computed backtest', () => {
  const cs = candlesFromRows('ES', rows);
  const fills: FillEvent[] = [];
  const engine = new Engine(cs, settings);
  engine.onFill = (e) => fills.push(e);
  const run = engine.runActions(actions);

  it('fills, stop-loss, take-profit and P&L', () => {
    const trades = tradeRows(run, cs, 1, 100);
    expect(trades.map((t) => [t.side, t.entry_price, t.exit_price, t.pnl, t.reason])).toEqual([
      ['long', 100.25, 103.25, 146, 'take_profit'],
      ['short', 102.75, 105.75, -154, 'stop_loss'],
      ['long', 105.25, 103, -116.5, 'stop_loss'],
      ['long', 104.25, 105, 33.5, 'end'],
    ]);
    expect(Array.from(run.equity)).toEqual([10_000, 10_010.5, 10_146, 10_156.5, 9992, 9875.5, 9886, 9909]);
    expect(fills.map((f) => `${f.bar}:${f.kind}:${f.side}:${f.price}`)).toEqual([
      '1:entry:buy:100.25',
      '2:exit:sell:103.25',
      '3:entry:sell:102.75',
      '4:exit:buy:105.75',
      '5:entry:buy:105.25',
      '5:exit:sell:103',
      '6:entry:buy:104.25',
      '7:exit:sell:105',
    ]);
  });

  it('every metric, exactly', () => {
    const m = computeMetrics(run, cs);
    // daily returns from the session closes 10,156.5 and 9,909
    const r = [10_156.5 / 10_000 - 1, (9909 - 10_156.5) / 10_156.5];
    const mean = (r[0]! + r[1]!) / 2;
    const sd = Math.sqrt(((r[0]! - mean) ** 2 + (r[1]! - mean) ** 2) / 1);
    const sharpe = Math.round((mean / sd) * Math.sqrt(252) * 1e6) / 1e6;
    const pnl = [146, -154, -116.5, 33.5];
    const avg = -22.75;
    const sqnSd = Math.sqrt(pnl.reduce((a, p) => a + (p - avg) ** 2, 0) / 3);
    expect(m).toEqual({
      trades: 4,
      wins: 2,
      losses: 2,
      win_rate: 0.5,
      profit_factor: 0.663586, // 179.5 / 270.5
      net_profit: -91,
      gross_profit: 179.5,
      gross_loss: 270.5,
      total_return: -0.0091,
      annual_return: -0.683948, // compounded: (9909 / 10,000)^(252 / 2 days) - 1
      sharpe,
      max_drawdown: 0.027667, // 1 - 9875.5 / 10156.5
      max_drawdown_usd: 281,
      exposure: 0.875, // 7 of 8 bars with a position
      sqn: Math.round(((2 * avg) / sqnSd) * 1e6) / 1e6,
      avg_trade: -22.75,
      best_trade: 146,
      worst_trade: -154,
      commission: 16,
      final_equity: 9909,
      bars: 8,
      days: 2,
      risk_stops: 0,
    });
    expect(sharpe).toBe(-2.445521); // mean(r) / std(r, ddof=1) x sqrt(252)
    expect(monthlyPerformance(run, cs)).toEqual([{ month: '2024-01', pnl: -91, return: -0.0091, trades: 4 }]);
    expect(equityCurve(run, cs, 4).map((p) => p.equity)).toEqual([10_010.5, 10_156.5, 9875.5, 9909]);
  });

  it('edge cases: no trade, and no losing trade, stay finite', () => {
    const none = new Engine(cs, settings).runActions(new Int8Array(8));
    const m = computeMetrics(none, cs);
    expect(m).toMatchObject({ trades: 0, win_rate: 0, profit_factor: 0, sharpe: 0, sqn: 0, max_drawdown: 0, avg_trade: 0, final_equity: 10_000 });
    const oneWin = new Engine(cs, settings).runActions(Int8Array.from([LONG, NONE, EXIT, NONE, NONE, NONE, NONE, NONE]));
    const w = computeMetrics(oneWin, cs);
    expect(w).toMatchObject({ trades: 1, wins: 1, win_rate: 1, profit_factor: PROFIT_FACTOR_CAP, sqn: 0 });
    for (const v of Object.values(w)) expect(Number.isFinite(v)).toBe(true);
  });
});

describe('engine: risk controls', () => {
  const cs = candlesFromRows('ES', rows);

  it('daily loss limit: after the -154 fill in session 1 no entry is taken that session', () => {
    const run = new Engine(cs, { ...settings, daily_loss_limit: 100 }).runActions(actions);
    expect(run.trades.n).toBe(2);
    expect(run.riskStops).toBe(1);
  });

  it('maximum positions: a same-direction signal adds a position up to the limit', () => {
    const acts = Int8Array.from([LONG, LONG, LONG, NONE, NONE, NONE, NONE, NONE]);
    const wide = { ...settings, stop_loss_points: 50, take_profit_points: 50 };
    expect(new Engine(cs, { ...wide, max_positions: 1 }).runActions(acts).trades.n).toBe(1);
    expect(new Engine(cs, { ...wide, max_positions: 2 }).runActions(acts).trades.n).toBe(2);
    expect(new Engine(cs, { ...wide, max_positions: 3 }).runActions(acts).trades.n).toBe(3);
  });

  it('daily trade limit: one entry per session', () => {
    const run = new Engine(cs, { ...settings, daily_trade_limit: 1 }).runActions(actions);
    // session 0: the long (the short at bar 3 is refused); session 1: the long at bar 5 only
    expect(run.trades.entryBar).toEqual([1, 5]);
  });

  it('schedule: entries only inside the window', () => {
    // bars of session 0 open from 23:00 UTC; a window 23:02-23:59 refuses the fill at bar 1 (23:01)
    const run = new Engine(cs, { ...settings, schedule: { start: '23:02', end: '23:59', days: [1, 2, 3, 4, 5] } }).runActions(actions);
    expect(run.trades.entryBar[0]).toBe(3);
    const closed = new Engine(cs, { ...settings, schedule: { start: '23:00', end: '23:59', days: [6] } }).runActions(actions);
    expect(closed.trades.n).toBe(0);
  });
});

describe('strategies emit actions at the close of the bar that decides', () => {
  it('ema_cross 2/3 goes long on the cross up and short on the cross down', () => {
    const closes = [10, 10, 10, 9, 12, 13, 14, 10, 8, 7];
    const cs = candlesFromRows('ES', closes.map((c) => ({ o: c, h: c, l: c, c })));
    const out = new Int8Array(closes.length);
    STRATEGY_DEFS.ema_cross.create({ fast: 2, slow: 3 }, cs.barsPerSession).fill(cs, 0, cs.n, out);
    // EMA2/EMA3 exist from bar 2; at bar 3 fast < slow (short), bar 4 fast > slow (long), bar 7 short
    expect(Array.from(out)).toEqual([0, 0, 0, SHORT, LONG, 0, 0, SHORT, 0, 0]);
  });
});
