import type { Candles } from './candles.js';
import { ATR, Bollinger, EMA, RSI } from './indicators.js';
import { seriesCache } from './series.js';
import type { StrategyId } from './strategies.js';
import { alignment, alignmentAction, breakoutAction, crossAction, reboundAction, reversionAction, sideOf } from './strategy-rules.js';

/**
 * Batch actions of the five strategies over bars [from, to): the indicator series come from the
 * candles' SeriesCache (computed once per job by the same streaming classes, or for the EMA by the
 * same arithmetic in locals, so every value is the one `next` would compute), and each strategy's
 * rule is a plain loop over them with its state in
 * locals. Series are indexed from `from` (element j is bar from + j). The streaming `next` path of
 * live programs gives the same actions bar for bar (test/trading/batch.test.ts).
 */

const f64 = (a: Float64Array) => a.byteLength;

function closeSeries(cs: Candles, from: number, to: number, key: string, ind: { update(x: number): number }): Float64Array {
  return seriesCache(cs).get(
    `${key}:${from}:${to}`,
    () => {
      const c = cs.c;
      const out = new Float64Array(to - from);
      for (let i = from; i < to; i++) out[i - from] = ind.update(c[i]!);
      return out;
    },
    f64,
  );
}

/** EMA(n) of the closes of bars [from, to): the EMA class's arithmetic (SMA seed, then value + alpha x (x - value)) in locals. */
export function emaOf(cs: Candles, n: number, from: number, to: number): Float64Array {
  return seriesCache(cs).get(
    `ema:${n}:${from}:${to}`,
    () => {
      const c = cs.c;
      const alpha = 2 / (n + 1); // as in EMA
      const out = new Float64Array(to - from);
      let count = 0;
      let acc = 0;
      let value = NaN;
      for (let i = from; i < to; i++) {
        const x = c[i]!;
        if (count >= n) value = value + alpha * (x - value);
        else {
          acc += x;
          value = ++count < n ? NaN : acc / n;
        }
        out[i - from] = value;
      }
      return out;
    },
    f64,
  );
}
export const rsiOf = (cs: Candles, n: number, from: number, to: number) => closeSeries(cs, from, to, `rsi:${n}`, new RSI(n));

/** ATR(n) of bars [from, to), started at `from` (the engine's stop/target distances). */
export function atrOf(cs: Candles, n: number, from: number, to: number): Float64Array {
  return seriesCache(cs).get(
    `atr:${n}:${from}:${to}`,
    () => {
      const a = new ATR(n);
      const { h, l, c } = cs;
      const out = new Float64Array(to - from);
      for (let i = from; i < to; i++) out[i - from] = a.update(h[i]!, l[i]!, c[i]!);
      return out;
    },
    f64,
  );
}

/**
 * Highest (max) or lowest value of the last n inputs, NaN until n values were seen: a monotonic deque
 * of indices in a ring whose size is a power of two, all state in locals.
 */
export function rollingExtreme(xs: Float64Array, from: number, to: number, n: number, max: boolean): Float64Array {
  const len = to - from;
  const out = new Float64Array(len);
  let cap = 1;
  while (cap < n + 1) cap <<= 1;
  const mask = cap - 1;
  const dq = new Int32Array(cap);
  let head = 0;
  let tail = 0; // exclusive; size = tail - head
  for (let j = 0; j < len; j++) {
    const x = xs[from + j]!;
    if (max) {
      while (tail > head && xs[from + dq[(tail - 1) & mask]!]! <= x) tail--;
    } else {
      while (tail > head && xs[from + dq[(tail - 1) & mask]!]! >= x) tail--;
    }
    dq[tail & mask] = j;
    tail++;
    if (dq[head & mask]! <= j - n) head++;
    out[j] = j + 1 >= n ? xs[from + dq[head & mask]!]! : NaN;
  }
  return out;
}

const rollingOf = (cs: Candles, n: number, from: number, to: number, max: boolean) =>
  seriesCache(cs).get(`${max ? 'hh' : 'll'}:${n}:${from}:${to}`, () => rollingExtreme(max ? cs.h : cs.l, from, to, n, max), f64);

function bollingerOf(cs: Candles, n: number, k: number, from: number, to: number) {
  return seriesCache(cs).get(
    `bb:${n}:${k}:${from}:${to}`,
    () => {
      const b = new Bollinger(n, k);
      const c = cs.c;
      const len = to - from;
      const mid = new Float64Array(len);
      const up = new Float64Array(len);
      const lo = new Float64Array(len);
      for (let j = 0; j < len; j++) {
        mid[j] = b.update(c[from + j]!);
        up[j] = b.upper;
        lo[j] = b.lower;
      }
      return { mid, up, lo };
    },
    (v) => 3 * v.mid.byteLength,
  );
}

/**
 * Trend of one timeframe of `mult` base bars (a higher bar completes at a multiple of `mult` or at the
 * session end): EMA(fast) vs EMA(slow) of the completing closes, 0 until the slow EMA exists.
 */
function trendOf(cs: Candles, fast: number, slow: number, mult: number, from: number, to: number) {
  return seriesCache(cs).get(
    `tf:${fast}:${slow}:${mult}:${from}:${to}`,
    () => {
      const len = to - from;
      const trend = new Int8Array(len);
      const fe = new EMA(fast);
      const se = new EMA(slow);
      const last = cs.barsPerSession - 1;
      const { c, pos } = cs;
      let t = 0;
      for (let j = 0; j < len; j++) {
        const p = pos[from + j]!;
        if ((p + 1) % mult === 0 || p === last) {
          const x = c[from + j]!;
          const f = fe.update(x);
          const s = se.update(x);
          t = sideOf(f, s, s);
        }
        trend[j] = t;
      }
      return trend;
    },
    (v) => v.byteLength,
  );
}

/** Actions of `strategy` for bars [from, to) into out[from..to). */
export function batchActions(id: StrategyId, p: Record<string, number>, cs: Candles, from: number, to: number, out: Int8Array): void {
  const len = to - from;
  switch (id) {
    case 'ema_cross': {
      const f = emaOf(cs, p.fast!, from, to);
      const s = emaOf(cs, p.slow!, from, to);
      let prev = NaN;
      for (let j = 0; j < len; j++) {
        const d = f[j]! - s[j]!;
        out[from + j] = crossAction(d, prev);
        prev = d;
      }
      return;
    }
    case 'rsi_rebound': {
      const r = rsiOf(cs, p.period!, from, to);
      const lo = p.oversold!;
      const hi = p.overbought!;
      let prev = NaN;
      for (let j = 0; j < len; j++) {
        const x = r[j]!;
        out[from + j] = reboundAction(x, prev, lo, hi);
        prev = x;
      }
      return;
    }
    case 'breakout': {
      const hhS = rollingOf(cs, p.lookback!, from, to, true);
      const llS = rollingOf(cs, p.lookback!, from, to, false);
      const c = cs.c;
      let hh = NaN;
      let ll = NaN;
      let was = 0;
      for (let j = 0; j < len; j++) {
        // channel of the previous `lookback` bars (the current bar excluded)
        const x = c[from + j]!;
        const side = sideOf(x, hh, ll);
        out[from + j] = breakoutAction(side, was);
        was = side;
        hh = hhS[j]!;
        ll = llS[j]!;
      }
      return;
    }
    case 'mean_reversion': {
      const { mid, up, lo } = bollingerOf(cs, p.period!, p.k!, from, to);
      const c = cs.c;
      let pc = NaN;
      let pm = NaN;
      let pu = NaN;
      let pl = NaN;
      for (let j = 0; j < len; j++) {
        const x = c[from + j]!;
        const m = mid[j]!;
        const u = up[j]!;
        const l = lo[j]!;
        out[from + j] = reversionAction(x, m, u, l, pc, pm, pu, pl);
        pc = x;
        pm = m;
        pu = u;
        pl = l;
      }
      return;
    }
    case 'triple_sync': {
      const a = trendOf(cs, p.fast!, p.slow!, 1, from, to);
      const b = trendOf(cs, p.fast!, p.slow!, p.mid!, from, to);
      const dt = trendOf(cs, p.fast!, p.slow!, p.high!, from, to);
      let aligned = 0;
      for (let j = 0; j < len; j++) {
        const ta = a[j]!;
        const now = alignment(ta, b[j]!, dt[j]!);
        out[from + j] = alignmentAction(now, aligned);
        aligned = now;
      }
      return;
    }
  }
}
