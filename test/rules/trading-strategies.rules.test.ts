import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { atrOf, batchActions } from '../../src/trading/batch.js';
import { ATR } from '../../src/trading/indicators.js';
import { emptyCandles, type Candles } from '../../src/trading/candles.js';
import { EXIT, LONG, NONE, SHORT, STRATEGIES, STRATEGY_DEFS, expandGrid, strategyParams, type StrategyId } from '../../src/trading/strategies.js';
import { tripleWarmup } from '../../src/trading/strategy-runs.js';
import { naiveEma, naiveRsi } from '../support/naive-indicators.js';

// The five strategies' rules (docs/trading.md "Strategies") against a plain restatement of each, on
// short price series on a coarse grid, so that ties (a close on the channel, two equal EMAs, an RSI
// exactly at its level) happen often. Every path a strategy runs on is checked: the streaming `next`
// of live programs, the per-run `fill` of backtests and the shared-series `batchActions` of grids.

/** Candles from closes; high and low `spread` around the close, `bps` bars per session. */
function candles(closes: number[], spreads: number[], bps: number): Candles {
  const cs = emptyCandles('ES', '1m', closes.length);
  const out = { ...cs, barsPerSession: bps };
  closes.forEach((c, i) => {
    const s = spreads[i % spreads.length]!;
    out.o[i] = c;
    out.c[i] = c;
    out.h[i] = c + s;
    out.l[i] = c - s;
    out.v[i] = 1;
    out.session[i] = Math.floor(i / bps);
    out.pos[i] = i % bps;
  });
  return out;
}

/** The three paths' actions over the whole series; they must agree, and the streaming one is returned. */
function actions(id: StrategyId, raw: Record<string, number>, cs: Candles): number[] {
  const p = strategyParams(id, raw);
  const run = STRATEGY_DEFS[id].create(p, cs.barsPerSession);
  const streamed = Array.from({ length: cs.n }, (_, i) => run.next(cs.o[i]!, cs.h[i]!, cs.l[i]!, cs.c[i]!, cs.v[i]!, cs.session[i]!, cs.pos[i]!));
  const fill = new Int8Array(cs.n);
  STRATEGY_DEFS[id].create(p, cs.barsPerSession).fill(cs, 0, cs.n, fill);
  const batch = new Int8Array(cs.n);
  batchActions(id, p, cs, 0, cs.n, batch);
  expect(Array.from(fill), `${id} fill`).toEqual(streamed);
  expect(Array.from(batch), `${id} batch`).toEqual(streamed);
  return streamed;
}

// ---- plain restatements ------------------------------------------------------------------------

/** What a change of position `to` after `from` asks for (EXIT when it ends at 0). */
const turn = (from: number, to: number) => (to === from ? NONE : to === 1 ? LONG : to === -1 ? SHORT : EXIT);

const model: Record<StrategyId, (cs: Candles, p: Record<string, number>) => number[]> = {
  // long when EMA(fast) - EMA(slow) goes from <= 0 to > 0, short from >= 0 to < 0
  ema_cross(cs, p) {
    const c = Array.from(cs.c);
    const f = naiveEma(c, p.fast!);
    const s = naiveEma(c, p.slow!);
    return c.map((_, i) => {
      const d = f[i]! - s[i]!;
      const prev = i === 0 ? NaN : f[i - 1]! - s[i - 1]!;
      return d > 0 && prev <= 0 ? LONG : d < 0 && prev >= 0 ? SHORT : NONE;
    });
  },
  // long when RSI rises from under `oversold` to it or above; short when it falls from over `overbought` to it or below
  rsi_rebound(cs, p) {
    const r = naiveRsi(Array.from(cs.c), p.period!);
    return r.map((x, i) => {
      const prev = i === 0 ? NaN : r[i - 1]!;
      return prev < p.oversold! && x >= p.oversold! ? LONG : prev > p.overbought! && x <= p.overbought! ? SHORT : NONE;
    });
  },
  // the channel of the previous `lookback` bars (this bar excluded): a close above its high is long,
  // below its low short, acted on when the side changes to it
  breakout(cs, p) {
    const n = p.lookback!;
    let was = 0;
    return Array.from(cs.c, (c, i) => {
      const hh = i < n ? NaN : Math.max(...cs.h.slice(i - n, i));
      const ll = i < n ? NaN : Math.min(...cs.l.slice(i - n, i));
      const side = c > hh ? 1 : c < ll ? -1 : 0;
      const a = side === 1 && was !== 1 ? LONG : side === -1 && was !== -1 ? SHORT : NONE;
      was = side;
      return a;
    });
  },
  // population Bollinger bands: a close that falls under the lower band (from at or above it) is long,
  // over the upper short; a close that crosses the middle band back is an exit
  mean_reversion(cs, p) {
    const n = p.period!;
    const c = Array.from(cs.c);
    const band = c.map((_, i) => {
      if (i < n - 1) return { mid: NaN, up: NaN, lo: NaN };
      const w = c.slice(i - n + 1, i + 1);
      const mean = w.reduce((a, b) => a + b, 0) / n;
      const sd = Math.sqrt(w.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
      return { mid: mean, up: mean + p.k! * sd, lo: mean - p.k! * sd };
    });
    return c.map((x, i) => {
      const { mid, up, lo } = band[i]!;
      const pc = i === 0 ? NaN : c[i - 1]!;
      const prev = i === 0 ? { mid: NaN, up: NaN, lo: NaN } : band[i - 1]!;
      if (x < lo && pc >= prev.lo) return LONG;
      if (x > up && pc <= prev.up) return SHORT;
      if ((pc < prev.mid && x >= mid) || (pc > prev.mid && x <= mid)) return EXIT;
      return NONE;
    });
  },
  // EMA(fast) against EMA(slow) on three timeframes (every bar, every `mid` bars, every `high` bars,
  // a higher bar also completing at the session's last bar); long when all three point up, short when
  // all point down, an exit when they stop agreeing; nothing until the highest timeframe has `slow` bars
  triple_sync(cs, p) {
    const trendOf = (mult: number) => {
      const done: number[] = [];
      const trend: number[] = [];
      let t = 0;
      let ready = false;
      const readyAt: boolean[] = [];
      for (let i = 0; i < cs.n; i++) {
        const pos = cs.pos[i]!;
        if ((pos + 1) % mult === 0 || pos === cs.barsPerSession - 1) {
          done.push(cs.c[i]!);
          const f = naiveEma(done, p.fast!).at(-1)!;
          const s = naiveEma(done, p.slow!).at(-1)!;
          if (!Number.isNaN(s)) {
            ready = true;
            t = f > s ? 1 : f < s ? -1 : 0;
          }
        }
        trend.push(t);
        readyAt.push(ready);
      }
      return { trend, readyAt };
    };
    const [a, b, d] = [trendOf(1), trendOf(p.mid!), trendOf(p.high!)];
    let aligned = 0;
    return a.trend.map((ta, i) => {
      const now = d.readyAt[i] && ta === b.trend[i] && ta === d.trend[i] ? ta : 0;
      const act = turn(aligned, now);
      aligned = now;
      return act;
    });
  },
};

// ---- the rules on series full of ties ------------------------------------------------------------

const closes = (min: number, max: number) => fc.array(fc.integer({ min: 0, max: 12 }).map((x) => 100 + x / 2), { minLength: min, maxLength: max });
const settings: Record<StrategyId, fc.Arbitrary<Record<string, number>>> = {
  ema_cross: fc.tuple(fc.integer({ min: 2, max: 5 }), fc.integer({ min: 1, max: 4 })).map(([fast, d]) => ({ fast, slow: fast + d })),
  rsi_rebound: fc.record({ period: fc.integer({ min: 2, max: 5 }), oversold: fc.constantFrom(20, 25, 30, 100 / 3), overbought: fc.constantFrom(60, 70, 75, 200 / 3) }),
  breakout: fc.record({ lookback: fc.integer({ min: 2, max: 6 }) }),
  mean_reversion: fc.record({ period: fc.integer({ min: 2, max: 6 }), k: fc.constantFrom(0.5, 1, 1.5, 2) }),
  triple_sync: fc
    .tuple(fc.integer({ min: 2, max: 3 }), fc.integer({ min: 1, max: 2 }), fc.integer({ min: 2, max: 3 }), fc.integer({ min: 1, max: 3 }))
    .map(([fast, d, mid, dh]) => ({ fast, slow: fast + d, mid, high: mid + dh })),
};

describe('each strategy follows its rule on every path (ties included)', () => {
  for (const id of STRATEGIES) {
    it(id, () => {
      let acted = 0;
      fc.assert(
        fc.property(id === 'triple_sync' ? closes(30, 200) : closes(1, 70), fc.array(fc.constantFrom(0, 0.5, 1), { minLength: 1, maxLength: 4 }), fc.integer({ min: 3, max: 11 }), settings[id], (c, spreads, bps, raw) => {
          const cs = candles(c, spreads, bps);
          const p = strategyParams(id, raw);
          const got = actions(id, raw, cs);
          expect(got).toEqual(model[id](cs, p));
          if (got.some((a) => a !== NONE)) acted++;
        }),
        { numRuns: 300, seed: 20261127 },
      );
      // the series did make the strategy act
      expect(acted).toBeGreaterThan(30);
    });
  }
});

describe('the series a grid shares', () => {
  it('the ATR of a range (the engine\'s stop and target distances) is the ATR class run from the range\'s first bar', () => {
    const cs = candles(Array.from({ length: 60 }, (_, i) => 100 + ((i * 7) % 11) / 2), [0.5, 1, 0.25], 20);
    for (const [n, from, to] of [[3, 0, 60], [5, 10, 40], [14, 0, 30], [2, 59, 60]] as const) {
      const a = new ATR(n);
      const want = Array.from({ length: to - from }, (_, j) => a.update(cs.h[from + j]!, cs.l[from + j]!, cs.c[from + j]!));
      expect(Array.from(atrOf(cs, n, from, to))).toEqual(want);
    }
  });
});

describe('the actions and the ranges', () => {
  it('are 0 nothing, 1 long, -1 short, 2 exit: the engine reads the sign of a long or short as its side', () => {
    expect([NONE, LONG, SHORT, EXIT]).toEqual([0, 1, -1, 2]);
  });

  it('no action before the warm-up the definition declares, and a fill writes only its own range', () => {
    fc.assert(
      fc.property(fc.constantFrom(...STRATEGIES), closes(40, 120), fc.integer({ min: 3, max: 11 }), (id, c, bps) => {
        const cs = candles(c, [0, 1, 0.5], bps);
        const p = strategyParams(id, {});
        const small = id === 'triple_sync' ? { fast: 2, slow: 3, mid: 2, high: 3 } : id === 'ema_cross' ? { fast: 2, slow: 5 } : id === 'breakout' ? { lookback: 4 } : { period: 4 };
        const q = strategyParams(id, { ...p, ...small });
        const all = actions(id, q, cs);
        const first = all.findIndex((a) => a !== NONE);
        if (first >= 0) expect(first).toBeGreaterThanOrEqual(STRATEGY_DEFS[id].warmup(q, bps).bars);
        // a fill that ends just before an action leaves that bar (and every later one) alone
        for (const to of [first, all.findIndex((a, i) => i > first && a !== NONE)].filter((i) => i > 0)) {
          const out = new Int8Array(cs.n);
          STRATEGY_DEFS[id].create(q, bps).fill(cs, 0, to, out);
          expect(Array.from(out.subarray(to))).toEqual(Array(cs.n - to).fill(0));
          expect(Array.from(out.subarray(0, to))).toEqual(all.slice(0, to));
        }
      }),
      { numRuns: 200, seed: 7 },
    );
  });
});

describe('the boundaries, one by one', () => {
  const flatThen = (tail: number[]) => [...Array(8).fill(100), ...tail];

  it('EMA cross: equal EMAs are not a side; the cross is acted on when the difference passes 0', () => {
    // flat: both EMAs equal (difference 0), then a rise makes fast > slow: long; a fall back to equal is no short
    const up = actions('ema_cross', { fast: 2, slow: 4 }, candles(flatThen([101, 101, 101, 101, 101, 101]), [0], 1000));
    expect(up.indexOf(LONG)).toBe(8);
    expect(up.filter((a) => a !== NONE)).toEqual([LONG]);
    const down = actions('ema_cross', { fast: 2, slow: 4 }, candles(flatThen([99, 99]), [0], 1000));
    expect(down.filter((a) => a !== NONE)).toEqual([SHORT]);
    expect(down.indexOf(SHORT)).toBe(8);
    // during the warm-up nothing is acted on, however the prices move
    expect(actions('ema_cross', { fast: 2, slow: 4 }, candles([100, 90, 110], [0], 1000))).toEqual([NONE, NONE, NONE]);
  });

  it('RSI rebound: reaching the oversold level from below is the rebound; staying under it is not', () => {
    // period 2: down, down (RSI 0), then up by a quarter: average gain 0.125, loss 0.5, RSI exactly 20
    const down = candles([100, 99, 98, 98.25], [0], 1000);
    expect(actions('rsi_rebound', { period: 2, oversold: 20 }, down)).toEqual([NONE, NONE, NONE, LONG]);
    expect(actions('rsi_rebound', { period: 2, oversold: 19.5 }, down)).toEqual([NONE, NONE, NONE, LONG]);
    expect(actions('rsi_rebound', { period: 2, oversold: 20.5 }, down)).toEqual([NONE, NONE, NONE, NONE]);
    // up, up (RSI 100), then down by a quarter: RSI exactly 80
    const up = candles([100, 101, 102, 101.75], [0], 1000);
    expect(actions('rsi_rebound', { period: 2, overbought: 80 }, up)).toEqual([NONE, NONE, NONE, SHORT]);
    expect(actions('rsi_rebound', { period: 2, overbought: 80.5 }, up)).toEqual([NONE, NONE, NONE, SHORT]);
    expect(actions('rsi_rebound', { period: 2, overbought: 79.5 }, up)).toEqual([NONE, NONE, NONE, NONE]);
  });

  it('breakout: a close on the channel edge is inside it; only a close beyond it breaks out, once per side', () => {
    const lb = { lookback: 3 };
    // highs are close + 1: a close of 101 touches the channel high, 101.5 breaks it
    expect(actions('breakout', lb, candles([100, 100, 100, 101], [1], 1000))).toEqual([NONE, NONE, NONE, NONE]);
    expect(actions('breakout', lb, candles([100, 100, 100, 101.5, 102.5], [1], 1000))).toEqual([NONE, NONE, NONE, LONG, NONE]);
    expect(actions('breakout', lb, candles([100, 100, 100, 99, 97.5], [1], 1000))).toEqual([NONE, NONE, NONE, NONE, SHORT]);
    // the channel excludes the current bar and forgets bars older than the lookback
    expect(actions('breakout', lb, candles([110, 100, 100, 100, 105], [0], 1000))).toEqual([NONE, NONE, NONE, NONE, LONG]);
  });

  it('mean reversion: under the lower band is long, over the upper short, back at the middle an exit', () => {
    const p = { period: 2, k: 1 };
    // period 2, k 1: the bands are the two closes themselves, so a close is never beyond them
    expect(actions('mean_reversion', p, candles([100, 102, 100, 102], [0], 1000))).not.toContain(LONG);
    // a close over the upper band is short when the previous close was at or under its band: a flat
    // start puts the previous close exactly on it (period 2, k 0.5)
    expect(actions('mean_reversion', { period: 2, k: 0.5 }, candles([100, 100, 101], [0], 1000))).toEqual([NONE, NONE, SHORT]);
    expect(actions('mean_reversion', { period: 2, k: 0.5 }, candles([100, 100, 99], [0], 1000))).toEqual([NONE, NONE, LONG]);
    // period 3, k 0.5: 97 falls under the lower band (long), 99 crosses back over the middle (exit),
    // 100 rises over the upper band (short)
    const q = { period: 3, k: 0.5 };
    const cs = candles([100, 100, 100, 97, 99, 100, 101], [0], 1000);
    const got = actions('mean_reversion', q, cs);
    expect(got).toEqual([NONE, NONE, NONE, LONG, EXIT, SHORT, NONE]);
    expect(got).toEqual(model.mean_reversion(cs, strategyParams('mean_reversion', q)));
  });

  it('triple sync: equal fast and slow EMAs are no trend, so a tie on one timeframe ends the alignment', () => {
    // a steady rise aligns all three timeframes (long at bar 8); the close of bar 10 is the one value
    // that makes the base EMA(2) and EMA(3) equal (107.5), where neither higher timeframe completes
    const p = { fast: 2, slow: 3, mid: 2, high: 3 };
    const up = [100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 107];
    expect(actions('triple_sync', p, candles(up, [0], 1000))).toEqual([0, 0, 0, 0, 0, 0, 0, 0, LONG, NONE, EXIT]);
    const down = up.map((c) => 200 - c);
    expect(actions('triple_sync', p, candles(down, [0], 1000))).toEqual([0, 0, 0, 0, 0, 0, 0, 0, SHORT, NONE, EXIT]);
  });

  it('triple sync: no action before its warm-up bar, and the warm-up is the bar the highest timeframe completes its slow-th bar', () => {
    for (const [p, bps] of [
      [{ fast: 2, slow: 3, mid: 2, high: 3 }, 7],
      [{ fast: 2, slow: 4, mid: 2, high: 5 }, 6],
      [{ fast: 3, slow: 5, mid: 3, high: 4 }, 11],
      [{ fast: 9, slow: 21, mid: 5, high: 15 }, 1380],
    ] as const) {
      const w = tripleWarmup(p, bps);
      // the index of the base bar at which the `slow`-th higher bar of `high` bars completes
      let completed = 0;
      let at = -1;
      for (let i = 0; at < 0; i++) {
        const pos = i % bps;
        if ((pos + 1) % p.high === 0 || pos === bps - 1) completed++;
        if (completed === p.slow) at = i;
      }
      expect(w).toBe(at);
      expect(STRATEGY_DEFS.triple_sync.warmup(strategyParams('triple_sync', p), bps)).toEqual({ bars: at, needs: { base: p.slow, mid: p.slow, high: p.slow } });
      // a steady rise: every timeframe points up from its first slow EMA on, so the first action is at the warm-up
      const rise = Array.from({ length: at + 5 }, (_, i) => 100 + i);
      const got = actions('triple_sync', p, candles(rise, [0], bps));
      expect(got.indexOf(LONG)).toBe(at);
    }
  });
});

describe('parameters and grids', () => {
  it('the catalogue: ids, names and default grids as docs/trading.md gives them, each with its description', () => {
    expect(STRATEGIES).toEqual(['ema_cross', 'rsi_rebound', 'breakout', 'mean_reversion', 'triple_sync']);
    expect(STRATEGIES.map((id) => [STRATEGY_DEFS[id].id, STRATEGY_DEFS[id].name])).toEqual([
      ['ema_cross', 'EMA cross'],
      ['rsi_rebound', 'RSI rebound'],
      ['breakout', 'Breakout'],
      ['mean_reversion', 'Mean reversion'],
      ['triple_sync', 'Triple timeframe sync'],
    ]);
    expect(Object.fromEntries(STRATEGIES.map((id) => [id, STRATEGY_DEFS[id].ranges]))).toEqual({
      ema_cross: { fast: [5, 8, 10, 12, 15], slow: [20, 26, 30, 40, 50] },
      rsi_rebound: { period: [7, 10, 14, 21], oversold: [20, 25, 30, 35], overbought: [65, 70, 75, 80] },
      breakout: { lookback: [10, 15, 20, 30, 40, 55, 80, 100] },
      mean_reversion: { period: [10, 15, 20, 30, 40], k: [1.5, 2, 2.5, 3] },
      triple_sync: { fast: [5, 9, 12], slow: [21, 30, 50], mid: [5], high: [15] },
    });
    const words: Record<StrategyId, RegExp> = { ema_cross: /EMA\(fast\) crosses above EMA\(slow\)/, rsi_rebound: /RSI\(period\) rises back through oversold/, breakout: /highest high of the previous lookback bars/, mean_reversion: /lower Bollinger band/, triple_sync: /mid and high base bars/ };
    for (const id of STRATEGIES) expect(STRATEGY_DEFS[id].description).toMatch(words[id]);
  });

  it('fills the defaults of each strategy', () => {
    expect(strategyParams('ema_cross', {})).toEqual({ fast: 9, slow: 21 });
    expect(strategyParams('rsi_rebound', undefined)).toEqual({ period: 14, oversold: 30, overbought: 70 });
    expect(strategyParams('breakout', {})).toEqual({ lookback: 20 });
    expect(strategyParams('mean_reversion', {})).toEqual({ period: 20, k: 2 });
    expect(strategyParams('triple_sync', {})).toEqual({ fast: 9, slow: 21, mid: 5, high: 15 });
  });

  it.each([
    ['ema_cross', { fast: 2, slow: 3 }, true],
    ['ema_cross', { fast: 1, slow: 3 }, false],
    ['ema_cross', { fast: 200, slow: 400 }, true],
    ['ema_cross', { fast: 201, slow: 400 }, false],
    ['ema_cross', { fast: 10, slow: 401 }, false],
    ['ema_cross', { fast: 10, slow: 10 }, false],
    ['ema_cross', { fast: 10.5, slow: 20 }, false],
    ['ema_cross', { fast: 10, slow: 20, extra: 1 }, false],
    ['rsi_rebound', { period: 2, oversold: 1, overbought: 99 }, true],
    ['rsi_rebound', { period: 1 }, false],
    ['rsi_rebound', { period: 101 }, false],
    ['rsi_rebound', { period: 100 }, true],
    ['rsi_rebound', { oversold: 0.5 }, false],
    ['rsi_rebound', { oversold: 49, overbought: 51 }, true],
    ['rsi_rebound', { oversold: 49.5 }, false],
    ['rsi_rebound', { overbought: 50.5 }, false],
    ['rsi_rebound', { overbought: 99.5 }, false],
    ['breakout', { lookback: 2 }, true],
    ['breakout', { lookback: 1 }, false],
    ['breakout', { lookback: 500 }, true],
    ['breakout', { lookback: 501 }, false],
    ['mean_reversion', { period: 2, k: 0.5 }, true],
    ['mean_reversion', { period: 1 }, false],
    ['mean_reversion', { period: 200, k: 4 }, true],
    ['mean_reversion', { period: 201 }, false],
    ['mean_reversion', { k: 0.49 }, false],
    ['mean_reversion', { k: 4.01 }, false],
    ['triple_sync', { fast: 2, slow: 3, mid: 2, high: 3 }, true],
    ['triple_sync', { fast: 100, slow: 200, mid: 30, high: 120 }, true],
    ['triple_sync', { fast: 1, slow: 3 }, false],
    ['triple_sync', { fast: 101, slow: 150 }, false],
    ['triple_sync', { slow: 201 }, false],
    ['triple_sync', { fast: 5, slow: 5 }, false],
    ['triple_sync', { mid: 1 }, false],
    ['triple_sync', { mid: 31, high: 40 }, false],
    ['triple_sync', { mid: 5, high: 5 }, false],
    ['triple_sync', { mid: 2, high: 121 }, false],
  ] as const)('%s %j: accepted %s', (id, raw, ok) => {
    if (ok) expect(() => strategyParams(id, raw)).not.toThrow();
    else expect(() => strategyParams(id, raw)).toThrow();
  });

  it('expands the default grid, overridden per parameter, fixed values kept unless the grid names them', () => {
    const ema = expandGrid('ema_cross', undefined);
    expect(ema.asked).toBe(25);
    expect(ema.skipped).toBe(0);
    expect(ema.combos[0]).toEqual({ fast: 5, slow: 20 });
    expect(ema.combos.at(-1)).toEqual({ fast: 15, slow: 50 });
    // the last axis turns fastest
    expect(ema.combos.slice(0, 3)).toEqual([{ fast: 5, slow: 20 }, { fast: 5, slow: 26 }, { fast: 5, slow: 30 }]);
    // invalid combinations are counted, not run
    const mixed = expandGrid('ema_cross', { fast: [10, 30], slow: [20, 30] });
    expect(mixed).toEqual({ combos: [{ fast: 10, slow: 20 }, { fast: 10, slow: 30 }], asked: 4, skipped: 2 });
    // a fixed value replaces its axis; one the grid names is searched
    expect(expandGrid('breakout', undefined, { lookback: 33 }).combos).toEqual([{ lookback: 33 }]);
    expect(expandGrid('breakout', { lookback: [7, 9] }, { lookback: 33 }).combos).toEqual([{ lookback: 7 }, { lookback: 9 }]);
    // fixed values of parameters with no axis are kept in every combination
    expect(expandGrid('mean_reversion', { period: [10], k: [2] }, { period: 10 }).combos).toEqual([{ period: 10, k: 2 }]);
  });

  it('an order refused names the later parameter and says what it must exceed', () => {
    const issue = (id: StrategyId, raw: Record<string, number>) => {
      try {
        strategyParams(id, raw);
      } catch (err) {
        return (err as { issues: { path: string[]; message: string }[] }).issues.map((i) => [i.path.join('.'), i.message]);
      }
      return [];
    };
    expect(issue('ema_cross', { fast: 10, slow: 10 })).toEqual([['slow', 'must be greater than fast']]);
    expect(issue('rsi_rebound', { oversold: 40, overbought: 51 })).toEqual([]);
    expect(issue('triple_sync', { fast: 9, slow: 9 })).toEqual([['slow', 'must be greater than fast']]);
    expect(issue('triple_sync', { mid: 15, high: 15 })).toEqual([['high', 'must be greater than mid']]);
  });

  it('a fixed value replaces its own axis, wherever it stands', () => {
    const fixedK = expandGrid('mean_reversion', undefined, { k: 2.5 });
    expect(fixedK.combos).toEqual([10, 15, 20, 30, 40].map((period) => ({ period, k: 2.5 })));
    expect(fixedK.asked).toBe(5);
    // a fixed value that is no parameter of the strategy is carried into every combination, which the strict schema then refuses
    expect(expandGrid('breakout', undefined, { extra: 1 })).toEqual({ combos: [], asked: 8, skipped: 8 });
  });

  it('declares each strategy\'s warm-up and what each timeframe needs', () => {
    const w = (id: StrategyId) => STRATEGY_DEFS[id].warmup(strategyParams(id, {}), 1380);
    expect(STRATEGIES.map(w)).toEqual([
      { bars: 21, needs: { base: 21 } },
      { bars: 15, needs: { base: 15 } },
      { bars: 20, needs: { base: 20 } },
      { bars: 20, needs: { base: 20 } },
      { bars: 314, needs: { base: 21, mid: 21, high: 21 } },
    ]);
  });

  it('refuses to expand a grid over 100,000 combinations (counted, none made)', () => {
    const axis = Array.from({ length: 317 }, (_, i) => i + 2);
    const over = expandGrid('ema_cross', { fast: axis, slow: axis });
    expect(over).toEqual({ combos: [], asked: 317 * 317, skipped: 0 });
    const at = expandGrid('ema_cross', { fast: Array.from({ length: 100 }, (_, i) => i + 2), slow: Array.from({ length: 1000 }, (_, i) => i + 3) });
    expect(at.asked).toBe(100_000);
    expect(at.combos.length + at.skipped).toBe(100_000);
  });
});
