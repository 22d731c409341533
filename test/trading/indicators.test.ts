import * as ti from 'technicalindicators';
import * as ts from 'trading-signals';
import { describe, expect, it } from 'vitest';
import { candlesFromRows, generateCandles } from '../../src/trading/candles.js';
import {
  ATR,
  atrSeries,
  Bollinger,
  bollingerSeries,
  EMA,
  emaSeries,
  MACD,
  macdSeries,
  RSI,
  rsiSeries,
  SMA,
  smaSeries,
  VWAP,
  vwapSeries,
} from '../../src/trading/indicators.js';

/**
 * Agreement with the definitions (shared/ANCHORS.md) and the npm reference libraries.
 * Tolerances: relative 1e-9 where a library computes the same definition (technicalindicators EMA,
 * SMA, MACD, population Bollinger, Wilder ATR; trading-signals Wilder RSI, SMA); 0.005 absolute for
 * technicalindicators RSI (it rounds to 2 decimals); trading-signals EMA seeds with the first price,
 * so it is compared only after 300 bars, at relative 1e-9.
 */
const cs = generateCandles({ seed: 7, symbol: 'CL', timeframe: '5m', count: 3000 });
const close = Array.from(cs.c);
const high = Array.from(cs.h);
const low = Array.from(cs.l);

/** Our series aligned to a library's output (which starts at its first defined value). */
function tail(ours: Float64Array, len: number): number[] {
  return Array.from(ours.subarray(ours.length - len));
}
function expectClose(a: number[], b: number[], rel: number, abs = 0) {
  expect(a.length).toBe(b.length);
  for (let i = 0; i < a.length; i++) {
    const tol = Math.max(abs, rel * Math.max(1, Math.abs(b[i]!)));
    if (!(Math.abs(a[i]! - b[i]!) <= tol)) throw new Error(`index ${i}: ${a[i]} vs ${b[i]} (tolerance ${tol})`);
  }
}

describe('indicators against technicalindicators 3.1', () => {
  it('EMA (SMA seed): first value at n-1, relative 1e-9', () => {
    for (const n of [2, 9, 21, 50]) {
      const ref = ti.EMA.calculate({ period: n, values: close });
      const ours = emaSeries(close, n);
      expect(Number.isNaN(ours[n - 2]!)).toBe(true);
      expect(ours[n - 1]).not.toBeNaN();
      expect(ref.length).toBe(close.length - n + 1);
      expectClose(tail(ours, ref.length), ref, 1e-9);
    }
  });
  it('SMA, relative 1e-9 (also past the running-sum resync)', () => {
    const long = Array.from(generateCandles({ seed: 3, symbol: 'ES', timeframe: '1m', count: 10_000 }).c);
    for (const n of [5, 20, 200]) {
      const ref = ti.SMA.calculate({ period: n, values: long });
      expectClose(tail(smaSeries(long, n), ref.length), ref, 1e-9);
    }
  });
  it('RSI (Wilder), absolute 0.005 (the library rounds to 2 decimals)', () => {
    for (const n of [2, 14]) {
      const ref = ti.RSI.calculate({ period: n, values: close });
      const ours = rsiSeries(close, n);
      expect(Number.isNaN(ours[n - 1]!)).toBe(true);
      expect(ours[n]).not.toBeNaN();
      expectClose(tail(ours, ref.length), ref, 0, 0.005 + 1e-9);
    }
  });
  it('MACD 12/26/9: line, signal and histogram, relative 1e-9', () => {
    const ref = ti.MACD.calculate({ values: close, fastPeriod: 12, slowPeriod: 26, signalPeriod: 9, SimpleMAOscillator: false, SimpleMASignal: false });
    const ours = macdSeries(close);
    expect(ref.length).toBe(close.length - 25);
    expectClose(tail(ours.macd, ref.length), ref.map((r) => r.MACD!), 1e-9);
    const withSignal = ref.filter((r) => r.signal !== undefined);
    expectClose(tail(ours.signal, withSignal.length), withSignal.map((r) => r.signal!), 1e-9);
    expectClose(tail(ours.histogram, withSignal.length), withSignal.map((r) => r.histogram!), 1e-9);
    expect(Number.isNaN(ours.signal[close.length - withSignal.length - 1]!)).toBe(true);
  });
  it('Bollinger 20/2 with the population sigma, relative 1e-9', () => {
    const ref = ti.BollingerBands.calculate({ period: 20, stdDev: 2, values: close });
    const ours = bollingerSeries(close, 20, 2);
    expectClose(tail(ours.middle, ref.length), ref.map((r) => r.middle), 1e-9);
    expectClose(tail(ours.upper, ref.length), ref.map((r) => r.upper), 1e-9);
    expectClose(tail(ours.lower, ref.length), ref.map((r) => r.lower), 1e-9);
  });
  it('ATR 14 (Wilder, seed = mean of TR_1..TR_14): first value at index 14, relative 1e-9', () => {
    const ref = ti.ATR.calculate({ high, low, close, period: 14 });
    const ours = atrSeries(high, low, close, 14);
    expect(Number.isNaN(ours[13]!)).toBe(true);
    expect(ref.length).toBe(close.length - 14);
    expectClose(tail(ours, ref.length), ref, 1e-9);
  });
});

describe('indicators against trading-signals 8', () => {
  it('RSI (exact Wilder), relative 1e-9', () => {
    const r = new ts.RSI(14);
    const ref: number[] = [];
    for (const x of close) {
      const v = r.add(x);
      if (v !== null && v !== undefined) ref.push(Number(v));
    }
    expectClose(tail(rsiSeries(close, 14), ref.length), ref, 1e-9);
  });
  it('SMA, relative 1e-9', () => {
    const r = new ts.SMA(20);
    const ref: number[] = [];
    for (const x of close) {
      const v = r.add(x);
      if (v !== null && v !== undefined) ref.push(Number(v));
    }
    expectClose(tail(smaSeries(close, 20), ref.length), ref, 1e-9);
  });
  it('EMA converges to ours after 300 bars (it seeds with the first price), relative 1e-9', () => {
    const r = new ts.EMA(21);
    const ref = close.map((x) => Number(r.add(x)));
    const ours = emaSeries(close, 21);
    expectClose(Array.from(ours.subarray(300)), ref.slice(300), 1e-9);
  });
});

describe('definitions by hand', () => {
  it('RSI is 100 with no loss and 50 on a flat series', () => {
    expect(rsiSeries([1, 2, 3, 4], 3)[3]).toBe(100);
    expect(rsiSeries([5, 5, 5, 5], 3)[3]).toBe(50);
  });
  it('ATR skips bar 0 and seeds with the mean of TR_1..TR_n', () => {
    // TR_1 = max(4-2, |4-2|, |2-2|) = 2; TR_2 = max(5-3, |5-3|, |3-3|) = 2; TR_3 = max(6-1, ...) = 5
    const a = atrSeries([3, 4, 5, 6, 4], [1, 2, 3, 1, 3], [2, 3, 4, 2, 3], 2);
    expect(Array.from(a.subarray(0, 2)).every(Number.isNaN)).toBe(true);
    expect(a[2]).toBe(2); // (2 + 2) / 2
    expect(a[3]).toBe(3.5); // (2*1 + 5)/2
    expect(a[4]).toBe((3.5 + 2) / 2); // TR_4 = max(1, |4-2|, |3-2|) = 2
  });
  it('VWAP resets at each session', () => {
    const c = candlesFromRows('ES', [
      { o: 1, h: 12, l: 6, c: 9, v: 10, session: 0 }, // TP 9
      { o: 1, h: 15, l: 9, c: 12, v: 30, session: 0 }, // TP 12
      { o: 1, h: 30, l: 18, c: 24, v: 5, session: 1 }, // TP 24: new session
    ]);
    const w = vwapSeries(c.h, c.l, c.c, c.v, c.session);
    expect(Array.from(w)).toEqual([9, (9 * 10 + 12 * 30) / 40, 24]);
  });
  it('streaming update equals the batch series, bar for bar', () => {
    const e = new EMA(9);
    const s = new SMA(9);
    const r = new RSI(9);
    const m = new MACD();
    const b = new Bollinger();
    const a = new ATR();
    const w = new VWAP();
    const eb = emaSeries(close, 9);
    const mb = macdSeries(close);
    const bb = bollingerSeries(close);
    const ab = atrSeries(high, low, close);
    const wb = vwapSeries(cs.h, cs.l, cs.c, cs.v, cs.session);
    const sb = smaSeries(close, 9);
    const rb = rsiSeries(close, 9);
    for (let i = 0; i < close.length; i++) {
      expect(Object.is(e.update(close[i]!), eb[i])).toBe(true);
      expect(Object.is(s.update(close[i]!), sb[i])).toBe(true);
      expect(Object.is(r.update(close[i]!), rb[i])).toBe(true);
      expect(Object.is(m.update(close[i]!), mb.macd[i])).toBe(true);
      expect(Object.is(b.update(close[i]!), bb.middle[i])).toBe(true);
      expect(Object.is(a.update(high[i]!, low[i]!, close[i]!), ab[i])).toBe(true);
      expect(Object.is(w.update(cs.h[i]!, cs.l[i]!, cs.c[i]!, cs.v[i]!, cs.session[i]!), wb[i])).toBe(true);
    }
  });
});
