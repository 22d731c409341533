import { describe, expect, it } from 'vitest';
import type { z } from 'zod';

// The trading request rules of src/trading/rules.ts (the bounds the analysis and program routes
// refuse with 400 invalid_body), each on both sides of its boundary. The module is imported inside
// each test so that a change to one of its constants fails tests rather than the file's loading.
const load = () => import('../../src/trading/rules.js');

type Issue = { path: (string | number)[]; message: string; code: string };
function collect() {
  const issues: Issue[] = [];
  const ctx = { addIssue: (i: Issue) => issues.push(i) } as unknown as z.RefinementCtx;
  return { issues, ctx };
}
const candles = (timeframe: '1m' | '5m' | '1h' | '1d', count: number) => ({ symbol: 'ES' as const, timeframe, count, seed: 1 });

describe('the limits', () => {
  it('are 500 combinations, 500 Monte Carlo runs, 50 windows and a billion bar evaluations', async () => {
    const r = await load();
    expect(r.MAX_COMBINATIONS).toBe(500);
    expect(r.MAX_MC_RUNS).toBe(500);
    expect(r.MAX_WINDOWS).toBe(50);
    expect(r.MAX_WALKFORWARD_BAR_EVALUATIONS).toBe(1_000_000_000);
  });
});

describe('checkParams', () => {
  it('returns the parameters with their defaults filled in', async () => {
    const { checkParams } = await load();
    const { issues, ctx } = collect();
    expect(checkParams('ema_cross', { fast: 5 }, ['params'], ctx)).toEqual({ fast: 5, slow: 21 });
    expect(checkParams('ema_cross', undefined, ['params'], ctx)).toEqual({ fast: 9, slow: 21 });
    expect(issues).toEqual([]);
  });

  it('adds each issue under the prefix and returns nothing', async () => {
    const { checkParams } = await load();
    const { issues, ctx } = collect();
    expect(checkParams('ema_cross', { fast: 1, slow: 3.5 }, ['legs', 0, 'params'], ctx)).toBeUndefined();
    expect(issues.map((i) => i.path)).toEqual([
      ['legs', 0, 'params', 'fast'],
      ['legs', 0, 'params', 'slow'],
    ]);
    expect(issues.every((i) => i.code === 'custom' && i.message.length > 0)).toBe(true);
  });
});

describe('checkCandles: at most 12,000,000 one-minute bars', () => {
  it('accepts 12,000,000 one-minute candles and refuses 12,000,001', async () => {
    const { checkCandles } = await load();
    const ok = collect();
    checkCandles(candles('1m', 12_000_000), ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkCandles(candles('1m', 12_000_001), bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['count'], message: '12000001 1m candles need 12000001 one-minute bars; at most 12000000 (12000000 1m candles)' },
    ]);
  });

  it('counts a daily candle as 1380 minutes: 8695 fit, 8696 do not', async () => {
    const { checkCandles } = await load();
    const ok = collect();
    checkCandles(candles('1d', 8695), ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkCandles(candles('1d', 8696), bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['count'], message: '8696 1d candles need 12000480 one-minute bars; at most 12000000 (8695 1d candles)' },
    ]);
  });
});

describe('checkWarmup: the warm-up bars plus a bar to fill', () => {
  it('needs slow + 2 candles for an EMA cross', async () => {
    const { checkWarmup } = await load();
    const ok = collect();
    checkWarmup('ema_cross', { fast: 9, slow: 21 }, candles('1m', 23), 23, 'count', ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkWarmup('ema_cross', { fast: 9, slow: 21 }, candles('1m', 22), 22, 'bars', bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['bars'], message: 'ema_cross needs at least 23 candles (21 on base completed bars before it can act, then a bar to fill); got 22' },
    ]);
  });

  it('reads the session length of the timeframe (1380 minutes a session) for the triple sync', async () => {
    const { checkWarmup } = await load();
    const p = { fast: 9, slow: 21, mid: 5, high: 15 };
    // 1h: 23 bars a session, 2 higher bars each: 10 sessions and one more higher bar -> 244 bars
    const ok = collect();
    checkWarmup('triple_sync', p, candles('1h', 246), 246, 'count', ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkWarmup('triple_sync', p, candles('1h', 245), 245, 'count', bad.ctx);
    expect(bad.issues.map((i) => i.message)).toEqual([
      'triple_sync needs at least 246 candles (21 on base, 21 on mid, 21 on high completed bars before it can act, then a bar to fill); got 245',
    ]);
    // 1d: one bar a session -> 20 bars; 1m: 1380 a session -> 314 bars
    const day = collect();
    checkWarmup('triple_sync', p, candles('1d', 21), 21, 'count', day.ctx);
    expect(day.issues.map((i) => i.message)).toEqual([
      'triple_sync needs at least 22 candles (21 on base, 21 on mid, 21 on high completed bars before it can act, then a bar to fill); got 21',
    ]);
    const minute = collect();
    checkWarmup('triple_sync', p, candles('1m', 315), 315, 'count', minute.ctx);
    expect(minute.issues.map((i) => i.message)).toEqual([
      'triple_sync needs at least 316 candles (21 on base, 21 on mid, 21 on high completed bars before it can act, then a bar to fill); got 315',
    ]);
  });
});

describe('checkGrid: the strategy parameters, each valid, at most 500 combinations', () => {
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

  it('returns the expanded grid when every value is valid', async () => {
    const { checkGrid } = await load();
    const { issues, ctx } = collect();
    const g = checkGrid('ema_cross', { fast: [5, 8], slow: [20, 30] }, { fast: 9, slow: 21 }, ctx);
    expect(issues).toEqual([]);
    expect(g?.asked).toBe(4);
    expect(g?.combos).toHaveLength(4);
    const d = checkGrid('ema_cross', undefined, {}, ctx);
    expect(issues).toEqual([]);
    expect(d?.asked).toBe(25);
  });

  it('names every unknown parameter and the ones the strategy has', async () => {
    const { checkGrid } = await load();
    const { issues, ctx } = collect();
    expect(checkGrid('ema_cross', { speed: [1], depth: [2], fast: [5] }, {}, ctx)).toBeUndefined();
    expect(issues).toEqual([
      { code: 'custom', path: ['grid', 'speed'], message: 'ema_cross has no parameter speed (it has fast, slow)' },
      { code: 'custom', path: ['grid', 'depth'], message: 'ema_cross has no parameter depth (it has fast, slow)' },
    ]);
  });

  it('names every value outside its schema by its index', async () => {
    const { checkGrid } = await load();
    const { issues, ctx } = collect();
    expect(checkGrid('ema_cross', { fast: [5, 1, 8, 201] }, {}, ctx)).toBeUndefined();
    expect(issues.map((i) => i.path)).toEqual([
      ['grid', 'fast', 1],
      ['grid', 'fast', 3],
    ]);
    expect(issues.every((i) => i.code === 'custom' && /2|200/.test(i.message))).toBe(true);
  });

  it('accepts 500 combinations and refuses 501', async () => {
    const { checkGrid } = await load();
    const ok = collect();
    const g = checkGrid('ema_cross', { fast: range(2, 100), slow: [200, 250, 300, 350, 400] }, {}, ok.ctx);
    expect(ok.issues).toEqual([]);
    expect(g?.asked).toBe(500);
    expect(g?.combos).toHaveLength(500);
    const bad = collect();
    expect(checkGrid('ema_cross', { fast: range(2, 167), slow: [300, 350, 400] }, {}, bad.ctx)).toBeUndefined();
    expect(bad.issues).toEqual([{ code: 'custom', path: ['grid'], message: '501 combinations asked; at most 500' }]);
  });

  it('refuses a grid none of whose combinations is valid', async () => {
    const { checkGrid } = await load();
    const { issues, ctx } = collect();
    expect(checkGrid('ema_cross', { fast: [50, 60], slow: [10] }, {}, ctx)).toBeUndefined();
    expect(issues).toEqual([{ code: 'custom', path: ['grid'], message: 'none of the 2 combinations is valid (2 skipped)' }]);
    const one = collect();
    const g = checkGrid('ema_cross', { fast: [5, 60], slow: [10] }, {}, one.ctx);
    expect(one.issues).toEqual([]);
    expect(g?.combos).toEqual([{ fast: 5, slow: 10 }]);
  });
});

describe('gridWarmup and checkGridWarmup: the slowest combination', () => {
  it('is the largest warm-up of the combinations, 0 for none', async () => {
    const { gridWarmup } = await load();
    expect(gridWarmup('ema_cross', '1m', [{ fast: 5, slow: 20 }, { fast: 5, slow: 50 }, { fast: 5, slow: 30 }])).toBe(50);
    expect(gridWarmup('ema_cross', '1m', [])).toBe(0);
    const p = { fast: 9, slow: 21, mid: 5, high: 15 };
    expect(gridWarmup('triple_sync', '1h', [p])).toBe(244);
    expect(gridWarmup('triple_sync', '1d', [p])).toBe(20);
  });

  it('needs the worst warm-up + 2 candles', async () => {
    const { checkGridWarmup } = await load();
    const combos = [{ fast: 5, slow: 20 }, { fast: 5, slow: 50 }];
    const ok = collect();
    checkGridWarmup('ema_cross', candles('1m', 52), combos, ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkGridWarmup('ema_cross', candles('1m', 51), combos, bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['count'], message: "the grid needs at least 52 candles (its slowest combination's warm-up); got 51" },
    ]);
  });
});

describe('checkWalkForward with a grid', () => {
  const wf = (count: number, inSample: number, outOfSample: number) => ({ ...candles('1m', count), in_sample: inSample, out_of_sample: outOfSample });

  it('needs in-sample windows of the worst warm-up + 2 candles', async () => {
    const { checkWalkForward } = await load();
    const combos = [{ fast: 5, slow: 50 }];
    const ok = collect();
    checkWalkForward('ema_cross', wf(100, 52, 10), 100, combos, ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkWalkForward('ema_cross', wf(100, 51, 10), 100, combos, bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['in_sample'], message: "in-sample windows need at least 52 candles (the grid's slowest warm-up); got 51" },
    ]);
  });

  it('judges no grid rule when there is no complete window', async () => {
    const { checkWalkForward } = await load();
    const bad = collect();
    checkWalkForward('ema_cross', wf(55, 51, 10), 10, [{ fast: 5, slow: 50 }], bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['in_sample'], message: 'no complete window: in_sample + out_of_sample = 61 is more than count 55' },
    ]);
  });

  it('accepts exactly a billion bar evaluations and refuses one more window of work', async () => {
    const { checkWalkForward } = await load();
    const combos = (n: number) => Array.from({ length: n }, () => ({ fast: 5, slow: 20 }));
    // 2 windows x 500 combinations x 1,000,000 in-sample bars = 1,000,000,000
    const ok = collect();
    checkWalkForward('ema_cross', wf(2_000_100, 1_000_000, 100), 1_000_000, combos(500), ok.ctx);
    expect(ok.issues).toEqual([]);
    const bad = collect();
    checkWalkForward('ema_cross', wf(2_000_102, 1_000_001, 100), 1_000_001, combos(500), bad.ctx);
    expect(bad.issues).toEqual([
      { code: 'custom', path: ['grid'], message: '500 combinations x 2 windows x 1000001 bars is over the 1000000000 bar-evaluation budget' },
    ]);
    // the work multiplies: 3 windows of the same grid are over it too
    const three = collect();
    checkWalkForward('ema_cross', wf(3_000_100, 1_000_000, 100), 1_000_000, combos(500), three.ctx);
    expect(three.issues.map((i) => i.path)).toEqual([['grid']]);
  });

  it('refuses 51 windows on the step and leaves the count to the windows', async () => {
    const { checkWalkForward } = await load();
    const bad = collect();
    checkWalkForward('ema_cross', wf(300 + 50 * 10, 200, 100), 10, undefined, bad.ctx);
    expect(bad.issues).toEqual([{ code: 'custom', path: ['step'], message: '51 windows; at most 50 (raise step or in_sample)' }]);
  });
});
