import { describe, expect, it } from 'vitest';
import {
  bestIndex,
  gridRows,
  runStrategy,
  walkForwardWindow,
  walkForwardWindows,
} from '../../src/trading/analyses.js';
import { monteCarlo, monteCarloRuns, monteCarloSummary } from '../../src/trading/monte-carlo.js';
import { aggregateCandles, candleChecksum, generateCandles, sliceCandles, type Candles } from '../../src/trading/candles.js';
import { defaultSettings } from '../../src/trading/engine.js';
import { computeMetrics } from '../../src/trading/metrics.js';
import { expandGrid, STRATEGIES, STRATEGY_DEFS } from '../../src/trading/strategies.js';
import { SYMBOL_SPECS, SYMBOLS } from '../../src/trading/symbols.js';
import { warmUp } from '../../src/trading/tasks.js';
import { monteCarloJob, monteCarloWhole } from './golden-support.js';

describe('candles', () => {
  it('the same seed gives the same bytes (pinned checksums: identical on every machine)', () => {
    const a = generateCandles({ seed: 42, symbol: 'ES', timeframe: '1m', count: 5000 });
    const b = generateCandles({ seed: 42, symbol: 'ES', timeframe: '1m', count: 5000 });
    expect(candleChecksum(a)).toBe(candleChecksum(b));
    expect(candleChecksum(generateCandles({ seed: 43, symbol: 'ES', timeframe: '1m', count: 5000 }))).not.toBe(candleChecksum(a));
    expect(candleChecksum(a)).toBe('2083e1dd');
    expect(candleChecksum(generateCandles({ seed: 1, symbol: '6E', timeframe: '1h', count: 500 }))).toBe('12ef381c');
  });
  it('higher timeframes aggregate lower ones exactly', () => {
    const m1 = generateCandles({ seed: 5, symbol: 'NQ', timeframe: '1m', count: 1380 * 3 });
    for (const tf of ['5m', '15m', '30m', '1h', '1d'] as const) {
      const direct = generateCandles({ seed: 5, symbol: 'NQ', timeframe: tf, count: (1380 * 3) / { '5m': 5, '15m': 15, '30m': 30, '1h': 60, '1d': 1380 }[tf] });
      const agg = aggregateCandles(m1, tf);
      expect(candleChecksum(direct)).toBe(candleChecksum(agg));
      expect(Array.from(direct.session)).toEqual(Array.from(agg.session));
    }
  });
  it('per symbol: prices on the tick grid near the level, bars consistent, sessions 23:00-22:00 UTC', () => {
    for (const s of SYMBOLS) {
      const spec = SYMBOL_SPECS[s];
      const cs = generateCandles({ seed: 9, symbol: s, timeframe: '1m', count: 3000 });
      for (let i = 0; i < cs.n; i++) {
        for (const p of [cs.o[i]!, cs.h[i]!, cs.l[i]!, cs.c[i]!]) expect(Math.abs(p * spec.invTick - Math.round(p * spec.invTick))).toBeLessThan(1e-6);
        expect(cs.h[i]!).toBeGreaterThanOrEqual(Math.max(cs.o[i]!, cs.c[i]!));
        expect(cs.l[i]!).toBeLessThanOrEqual(Math.min(cs.o[i]!, cs.c[i]!));
        expect(Number.isInteger(cs.v[i]!) && cs.v[i]! > 0).toBe(true);
      }
      expect(Math.abs(cs.c[cs.n - 1]! / spec.price - 1)).toBeLessThan(0.2);
      expect(new Date(cs.t[0]!).toISOString()).toBe('2023-12-31T23:00:00.000Z');
      expect(new Date(cs.t[1380]!).toISOString()).toBe('2024-01-01T23:00:00.000Z');
    }
  });
});

describe('optimization', () => {
  const cs = generateCandles({ seed: 11, symbol: 'GC', timeframe: '5m', count: 20_000 });
  const settings = defaultSettings();
  it("the grid's best equals the best of the same backtests run one by one", () => {
    for (const s of STRATEGIES) {
      const { combos } = expandGrid(s, undefined);
      const rows = gridRows(cs, s, combos, settings, undefined);
      const single = combos.map((p) => computeMetrics(runStrategy(cs, s, p, settings), cs));
      expect(rows.map((r) => r.metrics)).toEqual(single);
      let best = 0;
      single.forEach((m, i) => {
        if (m.sharpe > single[best]!.sharpe) best = i;
      });
      expect(bestIndex(rows, 'sharpe')).toBe(best);
    }
  });
  it("a worker's warm-up changes no later answer (its runs leave nothing a grid reads) and runs every strategy", () => {
    const few = (s: (typeof STRATEGIES)[number]) => expandGrid(s, undefined).combos.slice(-4);
    const before = STRATEGIES.map((s) => gridRows(cs, s, few(s), settings, undefined));
    const sets = [{ count: 3000, combos: 3 }, { count: 3000, combos: 3 }, { count: 8000, combos: 1 }];
    const total = warmUp(sets);
    expect(Number.isFinite(total)).toBe(true);
    expect(warmUp(sets)).toBe(total);
    expect(STRATEGIES.map((s) => gridRows(cs, s, few(s), settings, undefined))).toEqual(before);
    // the figure is computed from the runs: a warm-up of fewer combinations sums to another one
    expect(warmUp(sets.map((x) => ({ ...x, combos: 1 })))).not.toBe(total);
  });
});

describe('walk-forward', () => {
  const cs = generateCandles({ seed: 3, symbol: 'ES', timeframe: '5m', count: 6000 });
  const settings = defaultSettings();
  const { combos } = expandGrid('ema_cross', { fast: [5, 10], slow: [20, 40] });

  /** Candles whose bars from `from` on are garbage (a look-ahead would change the answer). */
  function poisoned(src: Candles, from: number): Candles {
    const c = { ...src, o: src.o.slice(), h: src.h.slice(), l: src.l.slice(), c: src.c.slice() };
    for (let i = from; i < c.n; i++) {
      c.o[i] = 1e9;
      c.h[i] = 2e9;
      c.l[i] = 1;
      c.c[i] = i % 2 ? 1 : 1e9;
    }
    return c;
  }

  it('never reads candles past its window (look-ahead test)', () => {
    const windows = walkForwardWindows(cs.n, 2000, 1000, 1000);
    expect(windows.length).toBe(4);
    let changed = 0;
    for (const w of windows) {
      const end = w.start + w.inSample + w.outOfSample;
      const clean = walkForwardWindow(cs, 'ema_cross', combos, settings, 'sharpe', w);
      // bars after the window poisoned, and the arrays cut at the window's end: same result
      expect(walkForwardWindow(poisoned(cs, end), 'ema_cross', combos, settings, 'sharpe', w)).toEqual(clean);
      expect(walkForwardWindow(sliceCandles(cs, 0, end), 'ema_cross', combos, settings, 'sharpe', w)).toEqual(clean);
      // poisoning inside the out-of-sample part can change it (the test is able to see a difference)
      const inside = walkForwardWindow(poisoned(cs, end - 200), 'ema_cross', combos, settings, 'sharpe', w);
      if (JSON.stringify(inside) !== JSON.stringify(clean)) changed++;
    }
    expect(changed).toBeGreaterThan(0);
  });

  it('warms indicators on the in-sample bars but counts only out-of-sample trades', () => {
    const w = walkForwardWindows(cs.n, 2000, 1000, 1000)[1]!;
    const r = walkForwardWindow(cs, 'ema_cross', combos, settings, 'sharpe', w);
    const oos = runStrategy(cs, 'ema_cross', r.in_sample.best_params, settings, { from: w.start, tradeFrom: w.start + 2000, to: w.start + 3000 });
    for (const b of oos.trades.entryBar) expect(b).toBeGreaterThanOrEqual(w.start + 2000);
    expect(r.out_of_sample.metrics.trades).toBe(oos.trades.n);
    expect(r.out_of_sample.metrics.bars).toBe(1000);
  });
});

describe('Monte Carlo', () => {
  const pnls = [120, -80, 45, -200, 300, -50, 75, -120, 60, 10];
  it('is reproducible from its seed, and shuffles keep the final equity', () => {
    const a = monteCarlo(pnls, 1000, 200, 7, 500);
    expect(monteCarlo(pnls, 1000, 200, 7, 500)).toEqual(a);
    expect(monteCarlo(pnls, 1000, 200, 8, 500)).not.toEqual(a);
    // the lowest equity of any ordering is at most the capital and at least capital - sum of losses
    expect(a.lowest_equity.p5!).toBeGreaterThanOrEqual(1000 - 450);
    expect(a.lowest_equity.p95!).toBeLessThanOrEqual(1000);
    expect(a.probability_of_ruin).toBe(0); // losses sum to 450: 1000 - 450 never reaches 500
    const ruin = monteCarlo(pnls, 1000, 200, 7, 700);
    expect(ruin.probability_of_ruin).toBeGreaterThan(0);
    expect(ruin.probability_of_ruin).toBeLessThanOrEqual(1);
  });
  it('cut into chunks of runs, gives the bytes of the whole job (any cut, several seeds and run counts)', () => {
    const cs = generateCandles({ seed: 4, symbol: 'CL', timeframe: '1m', count: 8000 });
    const trades = Float64Array.from(runStrategy(cs, 'ema_cross', { fast: 5, slow: 20 }, defaultSettings()).trades.pnl);
    expect(trades.length).toBeGreaterThan(100);
    const cuts = (runs: number, size: number) => Array.from({ length: Math.ceil(runs / size) }, (_, k) => [k * size, Math.min(runs, (k + 1) * size)] as const);
    let compared = 0;
    for (const [list, capital, ruin] of [[pnls, 1000, 700], [Array.from(trades), 100_000, 99_000]] as const) {
      for (const seed of [0, 7, 4_294_967_000]) {
        for (const runs of [1, 17, 200, 500]) {
          const whole = JSON.stringify(monteCarlo(list, capital, runs, seed, ruin));
          for (const size of [1, 16, 63, runs]) {
            const parts = cuts(runs, size).map(([from, to]) => monteCarloRuns(Float64Array.from(list), capital, from, to, seed, ruin));
            expect(JSON.stringify(monteCarloSummary(list.length, runs, seed, ruin, parts))).toBe(whole);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(2 * 3 * 4 * 4);
    // ruin happens in some runs only, so the counts of the chunks add up to a share strictly inside (0, 1)
    const ruined = monteCarlo(pnls, 1000, 200, 7, 700).probability_of_ruin;
    expect(ruined > 0 && ruined < 1).toBe(true);
    // parts out of order or missing runs are refused, not summarized
    const [a, b] = [monteCarloRuns(pnls, 1000, 0, 10, 7, 700), monteCarloRuns(pnls, 1000, 10, 20, 7, 700)];
    expect(() => monteCarloSummary(pnls.length, 20, 7, 700, [b, a])).toThrow(/in order/);
    expect(() => monteCarloSummary(pnls.length, 20, 7, 700, [a])).toThrow(/cover 10 runs of 20/);
  });
  it("the job's tasks (backtest, then chunks of runs) give the bytes of the job computed in one piece, however the runs are cut", () => {
    const spec = { seed: 7, symbol: 'ES', timeframe: '1m', count: 30_000 } as const;
    const settings = defaultSettings();
    for (const [strategy, runs, seed] of [['ema_cross', 300, 17], ['breakout', 120, 3]] as const) {
      const params = STRATEGY_DEFS[strategy].schema.parse({});
      const ruin_level = 95_000;
      const c = { candles: spec, strategy, params, settings, runs, seed, ruin_level };
      const whole = JSON.stringify(monteCarloWhole(c));
      for (const cuts of [[], [40, 41, 200], [1, runs - 1]]) expect(JSON.stringify(monteCarloJob(c, cuts))).toBe(whole);
    }
  });
  it('no trades: every percentile is the capital, no ruin', () => {
    const r = monteCarlo([], 1000, 10, 1, 500);
    expect(r.final_equity).toEqual({ p5: 1000, p25: 1000, p50: 1000, p75: 1000, p95: 1000 });
    expect(r.probability_of_ruin).toBe(0);
  });
});

describe('triple_sync warm-up', () => {
  it('waits until all three timeframes have slow completed bars', () => {
    const p = STRATEGY_DEFS.triple_sync.schema.parse({});
    const w = STRATEGY_DEFS.triple_sync.warmup(p, 1380);
    expect(w).toEqual({ bars: 21 * 15 - 1, needs: { base: 21, mid: 21, high: 21 } });
    const cs = generateCandles({ seed: 2, symbol: 'ES', timeframe: '1m', count: 2000 });
    const out = new Int8Array(cs.n);
    STRATEGY_DEFS.triple_sync.create(p, 1380).fill(cs, 0, cs.n, out);
    const first = out.findIndex((a) => a !== 0);
    expect(first).toBeGreaterThanOrEqual(w.bars);
  });
});
