import { describe, expect, it } from 'vitest';
import { batchActions, rollingExtreme } from '../../src/trading/batch.js';
import { generateCandles, type Candles } from '../../src/trading/candles.js';
import { RollingExtreme } from '../../src/trading/indicators.js';
import { SeriesCache } from '../../src/trading/series.js';
import { STRATEGIES, STRATEGY_DEFS, type StrategyId } from '../../src/trading/strategies.js';

/** Actions of the streaming path (what a live program computes), bar by bar from `from`. */
function streamed(cs: Candles, id: StrategyId, p: Record<string, number>, from: number, to: number): Int8Array {
  const s = STRATEGY_DEFS[id].create(p, cs.barsPerSession);
  const out = new Int8Array(cs.n);
  for (let i = from; i < to; i++) out[i] = s.next(cs.o[i]!, cs.h[i]!, cs.l[i]!, cs.c[i]!, cs.v[i]!, cs.session[i]!, cs.pos[i]!);
  return out;
}

const params: Record<StrategyId, Record<string, number>[]> = {
  ema_cross: [{}, { fast: 2, slow: 3 }, { fast: 30, slow: 200 }],
  rsi_rebound: [{}, { period: 2, oversold: 10, overbought: 90 }],
  breakout: [{}, { lookback: 2 }, { lookback: 3 }, { lookback: 64 }, { lookback: 500 }],
  mean_reversion: [{}, { period: 2, k: 0.5 }, { period: 200, k: 4 }],
  triple_sync: [{}, { fast: 2, slow: 3, mid: 2, high: 3 }, { fast: 9, slow: 21, mid: 30, high: 120 }],
};

describe('batch actions', () => {
  const sets = [generateCandles({ seed: 21, symbol: 'CL', timeframe: '1m', count: 12_000 }), generateCandles({ seed: 4, symbol: '6E', timeframe: '15m', count: 3000 })];
  for (const id of STRATEGIES) {
    it(`${id}: the shared-series batch and the batch fill give the streaming actions bar for bar`, () => {
      let acting = 0;
      for (const cs of sets) {
        for (const raw of params[id]) {
          const p = STRATEGY_DEFS[id].schema.parse(raw);
          for (const [from, to] of [[0, cs.n], [777, cs.n - 5], [1500, 2600]] as const) {
            const want = streamed(cs, id, p, from, to);
            const batch = new Int8Array(cs.n);
            batchActions(id, p, cs, from, to, batch);
            expect(Buffer.from(batch).equals(Buffer.from(want))).toBe(true);
            const fill = new Int8Array(cs.n);
            STRATEGY_DEFS[id].create(p, cs.barsPerSession).fill(cs, from, to, fill);
            expect(Buffer.from(fill).equals(Buffer.from(want))).toBe(true);
            if (want.some((a) => a !== 0)) acting++;
          }
        }
      }
      // the comparison saw actions (not only warm-up)
      expect(acting).toBeGreaterThan(sets.length * params[id].length);
    });
  }

  it('rolling extremes equal the streaming RollingExtreme (ties, plateaus, every window size)', () => {
    const xs = Float64Array.from({ length: 3000 }, (_, i) => Math.round(Math.sin(i / 7) * 5 + ((i * 7919) % 13)) / 2);
    for (const n of [1, 2, 3, 5, 16, 17, 100, 2999]) {
      for (const max of [true, false]) {
        const r = new RollingExtreme(n, max);
        const want = Float64Array.from(xs, (x) => r.update(x));
        expect(Array.from(rollingExtreme(xs, 0, xs.length, n, max))).toEqual(Array.from(want));
      }
    }
  });

  it('the series cache gives the same array back and drops the oldest past its byte limit', () => {
    const c = new SeriesCache(100);
    let made = 0;
    const make = () => (made++, new Float64Array(5));
    const a = c.get('a', make, (v) => v.byteLength);
    expect(c.get('a', make, (v) => v.byteLength)).toBe(a);
    c.get('b', make, (v) => v.byteLength);
    expect(made).toBe(2);
    c.get('c', make, (v) => v.byteLength); // 120 bytes > 100: 'a' leaves
    expect(c.size).toBe(2);
    expect(c.get('a', make, (v) => v.byteLength)).not.toBe(a);
    expect(made).toBe(4);
  });
});
