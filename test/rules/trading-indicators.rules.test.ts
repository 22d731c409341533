import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ATR,
  Bollinger,
  EMA,
  MACD,
  RSI,
  RollingExtreme,
  SMA,
  VWAP,
  atrSeries,
  bollingerSeries,
  emaSeries,
  macdSeries,
  rsiSeries,
  smaSeries,
  vwapSeries,
} from '../../src/trading/indicators.js';
import { naiveEma, naiveRsi } from '../support/naive-indicators.js';

// Each indicator against a naive implementation of its definition (TA-Lib, shared/ANCHORS.md), on
// series long enough that warm-up, window roll-over and the periodic resync are all crossed.

const prices = fc.array(fc.integer({ min: 1, max: 400 }).map((x) => x / 4), { minLength: 1, maxLength: 60 });
const close = (a: number, b: number) => (Number.isNaN(a) ? Number.isNaN(b) : Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)));
function expectSeries(actual: ArrayLike<number>, expected: number[]) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) expect(close(actual[i]!, expected[i]!), `index ${i}: ${actual[i]} vs ${expected[i]}`).toBe(true);
}
function lcg(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}
const walk = (len: number, seed: number) => {
  const r = lcg(seed);
  let p = 100;
  return Array.from({ length: len }, () => (p = Math.max(1, p + (r() - 0.5) * 4)));
};

const naiveSma = (xs: number[], n: number) => xs.map((_, i) => (i < n - 1 ? NaN : xs.slice(i - n + 1, i + 1).reduce((a, b) => a + b, 0) / n));
const naiveExtreme = (xs: number[], n: number, max: boolean) =>
  xs.map((_, i) => (i < n - 1 ? NaN : (max ? Math.max : Math.min)(...xs.slice(i - n + 1, i + 1))));

describe('breakout channel (RollingExtreme)', () => {
  it('is the n-bar high and low, not the all-time one: old bars leave the window', () => {
    const xs = [10, 9, 8, 7, 6, 5];
    const hi = new RollingExtreme(3, true);
    expect(xs.map((x) => hi.update(x))).toEqual([NaN, NaN, 10, 9, 8, 7]);
    const lo = new RollingExtreme(3, false);
    expect([1, 2, 3, 4, 5, 6].map((x) => lo.update(x))).toEqual([NaN, NaN, 1, 2, 3, 4]);
  });
  it('equals the naive window extreme on any series, for windows 1 to 7', () => {
    fc.assert(
      fc.property(prices, fc.integer({ min: 1, max: 7 }), (xs, n) => {
        const hi = new RollingExtreme(n, true);
        const lo = new RollingExtreme(n, false);
        expect(xs.map((x) => hi.update(x))).toEqual(naiveExtreme(xs, n, true));
        expect(xs.map((x) => lo.update(x))).toEqual(naiveExtreme(xs, n, false));
      }),
      { numRuns: 300 },
    );
  });
  it('ties: an equal later value keeps the level after the earlier one leaves', () => {
    const hi = new RollingExtreme(2, true);
    expect([5, 5, 1, 1].map((x) => hi.update(x))).toEqual([NaN, 5, 5, 1]);
  });
});

describe('moving averages', () => {
  it('SMA and EMA equal their definitions; lookback n-1', () => {
    fc.assert(
      fc.property(prices, fc.integer({ min: 1, max: 9 }), (xs, n) => {
        expectSeries(smaSeries(xs, n), naiveSma(xs, n));
        expectSeries(emaSeries(xs, n), naiveEma(xs, n));
      }),
    );
    expect(new SMA(5).lookback).toBe(4);
    expect(new EMA(5).lookback).toBe(4);
    expect(new EMA(3).update(1)).toBeNaN();
  });
  it('SMA stays exact past the resync (4096 updates) with a window of 3', () => {
    const xs = walk(9000, 7);
    expectSeries(smaSeries(xs, 3), naiveSma(xs, 3));
    const sma = new SMA(2);
    for (let i = 0; i < 5000; i++) sma.update(i % 2 === 0 ? 1e6 : 1);
    expect(sma.value).toBeCloseTo((1e6 + 1) / 2, 9);
  });
  it('the resync recomputes the window sum: a rounding loss does not last past 4096 updates', () => {
    // 1e16 + 1 is not a double: the running sum loses the 1 and keeps the loss until the resync
    const sma = new SMA(2);
    sma.update(1e16);
    for (let i = 0; i < 5000; i++) sma.update(1);
    expect(sma.value).toBe(1);
    const b = new Bollinger(2, 2);
    b.update(0);
    b.update(1e16);
    for (let i = 0; i < 5000; i++) b.update(1);
    expect([b.value, b.sd, b.upper, b.lower]).toEqual([1, 0, 1, 1]);
  });
});

describe('RSI (Wilder)', () => {
  it('equals its definition; lookback n', () => {
    fc.assert(
      fc.property(prices, fc.integer({ min: 1, max: 6 }), (xs, n) => {
        expectSeries(rsiSeries(xs, n), naiveRsi(xs, n));
      }),
    );
    expect(new RSI(14).lookback).toBe(14);
    expectSeries(rsiSeries([1, 2, 1, 2, 1], 2), naiveRsi([1, 2, 1, 2, 1], 2));
  });
  it('100 without losses, 0 without gains, 50 flat', () => {
    expect(rsiSeries([1, 2, 3, 4], 2)[3]).toBe(100);
    expect(rsiSeries([4, 3, 2, 1], 2)[3]).toBe(0);
    expect(rsiSeries([2, 2, 2, 2], 2)[3]).toBe(50);
  });
});

describe('MACD', () => {
  it('line = EMA(fast) - EMA(slow); signal = EMA of the line from its first value; histogram = the difference', () => {
    const xs = walk(80, 3);
    const { macd, signal, histogram } = macdSeries(xs, 3, 6, 4);
    const f = naiveEma(xs, 3);
    const s = naiveEma(xs, 6);
    const line = xs.map((_, i) => (i < 5 ? NaN : f[i]! - s[i]!));
    expectSeries(macd, line);
    const sig = [...Array(5).fill(NaN), ...naiveEma(line.slice(5), 4)];
    expectSeries(signal, sig);
    expectSeries(histogram, line.map((m, i) => m - sig[i]!));
    expect(new MACD().lookback).toBe(25);
    expect(new MACD(3, 6, 4).lookback).toBe(5);
    const d = macdSeries(xs);
    expect(Number.isNaN(d.macd[24]!)).toBe(true);
    expect(Number.isNaN(d.macd[25]!)).toBe(false);
    expect(Number.isNaN(d.signal[32]!)).toBe(true);
    expect(Number.isNaN(d.signal[33]!)).toBe(false);
  });
});

describe('Bollinger bands', () => {
  it('SMA +/- k population sigma, also past the resync', () => {
    const xs = walk(4200, 11).map((x) => x + 1e4);
    const n = 5;
    const { middle, upper, lower } = bollingerSeries(xs, n, 2.5);
    const mid = naiveSma(xs, n);
    const sd = xs.map((_, i) => {
      if (i < n - 1) return NaN;
      const w = xs.slice(i - n + 1, i + 1);
      const m = w.reduce((a, b) => a + b, 0) / n;
      return Math.sqrt(w.reduce((a, b) => a + (b - m) ** 2, 0) / n);
    });
    for (let i = 0; i < xs.length; i++) {
      if (i < n - 1) {
        expect(Number.isNaN(middle[i]!) && Number.isNaN(upper[i]!) && Number.isNaN(lower[i]!)).toBe(true);
        continue;
      }
      expect(middle[i]!).toBeCloseTo(mid[i]!, 6);
      expect(upper[i]!).toBeCloseTo(mid[i]! + 2.5 * sd[i]!, 6);
      expect(lower[i]!).toBeCloseTo(mid[i]! - 2.5 * sd[i]!, 6);
    }
    const b = new Bollinger();
    expect([b.n, b.k, b.lookback]).toEqual([20, 2, 19]);
    const flat = new Bollinger(3, 2);
    for (const x of [7, 7, 7]) flat.update(x);
    expect([flat.value, flat.upper, flat.lower, flat.sd]).toEqual([7, 7, 7, 0]);
  });
});

describe('ATR and VWAP', () => {
  it('ATR: true range from bar 1, seeded by the mean of the first n, then Wilder smoothing', () => {
    const c = walk(40, 5);
    const h = c.map((x, i) => x + 1 + (i % 3));
    const l = c.map((x, i) => x - 1 - (i % 2));
    const n = 4;
    const tr = c.map((_, i) => (i === 0 ? NaN : Math.max(h[i]! - l[i]!, Math.abs(h[i]! - c[i - 1]!), Math.abs(l[i]! - c[i - 1]!))));
    const expected: number[] = [];
    let v = NaN;
    for (let i = 0; i < c.length; i++) {
      if (i < n) expected.push(NaN);
      else if (i === n) expected.push((v = tr.slice(1, n + 1).reduce((a, b) => a + b, 0) / n));
      else expected.push((v = (v * (n - 1) + tr[i]!) / n));
    }
    expectSeries(atrSeries(h, l, c, n), expected);
    expect(new ATR().lookback).toBe(14);
    // gaps: the previous close outside the bar's range makes the true range
    const gap = new ATR(1);
    gap.update(10, 9, 10);
    expect(gap.update(15, 14, 14.5)).toBe(5);
    expect(gap.update(9, 8, 8.5)).toBe(6.5);
  });
  it('VWAP: sum(TP x V) / sum(V), reset at each session, TP while there is no volume', () => {
    const h = [11, 12, 13, 14, 15];
    const l = [9, 10, 11, 12, 13];
    const c = [10, 11, 12, 13, 14];
    const v = [0, 2, 1, 3, 1];
    const s = [1, 1, 1, 2, 2];
    const tp = h.map((x, i) => (x + l[i]! + c[i]!) / 3);
    expectSeries(vwapSeries(h, l, c, v, s), [tp[0]!, tp[1]!, (tp[1]! * 2 + tp[2]!) / 3, tp[3]!, (tp[3]! * 3 + tp[4]!) / 4]);
    expect(new VWAP().lookback).toBe(0);
  });
});
