import type { Candles } from './candles.js';
import { Bollinger, EMA, RESYNC, RollingExtreme, RSI } from './indicators.js';
import { alignment, alignmentAction, breakoutAction, crossAction, reboundAction, reversionAction, sideOf } from './strategy-rules.js';

/**
 * The five strategies' runs (strategies.ts defines them: names, parameters, grids; strategy-rules.ts
 * their rules, each once). A run is position-agnostic: at the close of each bar it emits an action,
 * which the engine fills at the next bar's open. Streaming (`next`, one bar, O(1)) and batch (`fill`,
 * the same rule over a range, the indicators' arithmetic in locals) give the same actions bar for bar
 * (test/trading/batch.test.ts).
 */
export { EXIT, LONG, NONE, SHORT } from './strategy-rules.js';

export interface StrategyRun {
  next(o: number, h: number, l: number, c: number, v: number, session: number, pos: number): number;
  /** Actions for bars [from, to) into out[from..to). */
  fill(cs: Candles, from: number, to: number, out: Int8Array): void;
}

// ---- EMA cross -----------------------------------------------------------------------------------

export class EmaCross implements StrategyRun {
  private readonly fast: EMA;
  private readonly slow: EMA;
  private prevDiff = NaN;
  constructor(p: Record<string, number>) {
    this.fast = new EMA(p.fast!);
    this.slow = new EMA(p.slow!);
  }
  next(_o: number, _h: number, _l: number, c: number, _v?: number, _s?: number, _p?: number): number {
    const d = this.fast.update(c) - this.slow.update(c);
    const prev = this.prevDiff;
    this.prevDiff = d;
    return crossAction(d, prev);
  }
  fill(cs: Candles, from: number, to: number, out: Int8Array): void {
    const { o, h, l, c, v, session, pos } = cs;
    for (let i = from; i < to; i++) out[i] = this.next(o[i]!, h[i]!, l[i]!, c[i]!, v[i]!, session[i]!, pos[i]!);
  }
}

// ---- RSI rebound ---------------------------------------------------------------------------------

export class RsiRebound implements StrategyRun {
  private readonly rsi: RSI;
  private prev = NaN;
  private readonly lo: number;
  private readonly hi: number;
  constructor(p: Record<string, number>) {
    this.rsi = new RSI(p.period!);
    this.lo = p.oversold!;
    this.hi = p.overbought!;
  }
  next(_o: number, _h: number, _l: number, c: number, _v?: number, _s?: number, _p?: number): number {
    const r = this.rsi.update(c);
    const prev = this.prev;
    this.prev = r;
    return reboundAction(r, prev, this.lo, this.hi);
  }
  fill(cs: Candles, from: number, to: number, out: Int8Array): void {
    const { o, h, l, c, v, session, pos } = cs;
    for (let i = from; i < to; i++) out[i] = this.next(o[i]!, h[i]!, l[i]!, c[i]!, v[i]!, session[i]!, pos[i]!);
  }
}

// ---- Breakout (Donchian) -------------------------------------------------------------------------

export class Breakout implements StrategyRun {
  private readonly hi: RollingExtreme;
  private readonly lo: RollingExtreme;
  private hh = NaN;
  private ll = NaN;
  private side = 0;
  constructor(p: Record<string, number>) {
    this.hi = new RollingExtreme(p.lookback!, true);
    this.lo = new RollingExtreme(p.lookback!, false);
  }
  next(_o: number, h: number, l: number, c: number, _v?: number, _s?: number, _p?: number): number {
    // channel of the previous `lookback` bars (the current bar excluded)
    const hh = this.hh;
    const ll = this.ll;
    this.hh = this.hi.update(h);
    this.ll = this.lo.update(l);
    const side = sideOf(c, hh, ll);
    const was = this.side;
    this.side = side;
    return breakoutAction(side, was);
  }
  /**
   * Batch (a fresh instance): the same channel from van Herk / Gil-Werman blocks of `lookback` bars,
   * state in locals: the extreme of a window is the larger of the suffix extreme of the block it starts
   * in and the prefix extreme of the block it ends in (no data-dependent loop, so few mispredictions).
   */
  fill(cs: Candles, from: number, to: number, out: Int8Array): void {
    const { h: H, l: L, c: C } = cs;
    const n = this.hi.n;
    const sufH = new Float64Array(n);
    const sufL = new Float64Array(n);
    let q = 0; // offset of bar i in its block
    let pH = 0; // highest high / lowest low of the block so far
    let pL = 0;
    let hh = NaN;
    let ll = NaN;
    let was = 0;
    for (let i = from; i < to; i++) {
      const x = C[i]!;
      const side = sideOf(x, hh, ll);
      out[i] = breakoutAction(side, was);
      was = side;
      const hv = H[i]!;
      const lv = L[i]!;
      if (q === 0) {
        if (i > from) {
          // the block that just ended: its suffix extremes
          let mh = H[i - 1]!;
          let ml = L[i - 1]!;
          sufH[n - 1] = mh;
          sufL[n - 1] = ml;
          for (let k = n - 2; k >= 0; k--) {
            const a = H[i - n + k]!;
            const b = L[i - n + k]!;
            if (a > mh) mh = a;
            if (b < ml) ml = b;
            sufH[k] = mh;
            sufL[k] = ml;
          }
        }
        pH = hv;
        pL = lv;
      } else {
        if (hv > pH) pH = hv;
        if (lv < pL) pL = lv;
      }
      if (q === n - 1) {
        // the window is this block
        hh = pH;
        ll = pL;
        q = 0;
      } else {
        if (i - from >= n) {
          const a = sufH[q + 1]!;
          const b = sufL[q + 1]!;
          hh = a > pH ? a : pH;
          ll = b < pL ? b : pL;
        }
        q++;
      }
    }
  }
}

// ---- Mean reversion (Bollinger) ------------------------------------------------------------------

export class MeanReversion implements StrategyRun {
  private readonly bb: Bollinger;
  private prevC = NaN;
  private prevMid = NaN;
  private prevUp = NaN;
  private prevLo = NaN;
  constructor(p: Record<string, number>) {
    this.bb = new Bollinger(p.period!, p.k!);
  }
  next(_o: number, _h: number, _l: number, c: number, _v?: number, _s?: number, _p?: number): number {
    const mid = this.bb.update(c);
    const up = this.bb.upper;
    const lo = this.bb.lower;
    const pc = this.prevC;
    const pm = this.prevMid;
    const pu = this.prevUp;
    const pl = this.prevLo;
    this.prevC = c;
    this.prevMid = mid;
    this.prevUp = up;
    this.prevLo = lo;
    return reversionAction(c, mid, up, lo, pc, pm, pu, pl);
  }
  /**
   * Batch (a fresh instance): the Bollinger class's arithmetic in locals (sums relative to the first
   * close, resynced from the window every RESYNC updates), then the rule of `next`.
   */
  fill(cs: Candles, from: number, to: number, out: Int8Array): void {
    const C = cs.c;
    const n = this.bb.n;
    const k = this.bb.k;
    const buf = new Float64Array(n);
    let bi = 0;
    let count = 0;
    let ref = NaN;
    let sum = 0;
    let sumSq = 0;
    let sinceSync = 0;
    let pc = NaN;
    let pm = NaN;
    let pu = NaN;
    let pl = NaN;
    for (let i = from; i < to; i++) {
      const c = C[i]!;
      if (ref !== ref) ref = c;
      const x = c - ref;
      const old = buf[bi]!;
      buf[bi] = x;
      bi = bi + 1 === n ? 0 : bi + 1;
      let mid = NaN;
      let up = NaN;
      let lo = NaN;
      let ready = true;
      if (count < n) {
        count++;
        sum += x;
        sumSq += x * x;
        ready = count === n;
      } else if (++sinceSync === RESYNC) {
        sinceSync = 0;
        let s = 0;
        let q = 0;
        for (let j = 0; j < n; j++) {
          const b = buf[j]!;
          s += b;
          q += b * b;
        }
        sum = s;
        sumSq = q;
      } else {
        sum += x - old;
        sumSq += x * x - old * old;
      }
      if (ready) {
        const mean = sum / n;
        let variance = sumSq / n - mean * mean;
        if (variance < 0) variance = 0;
        const sd = Math.sqrt(variance);
        mid = mean + ref;
        up = mid + k * sd;
        lo = mid - k * sd;
      }
      out[i] = reversionAction(c, mid, up, lo, pc, pm, pu, pl);
      pc = c;
      pm = mid;
      pu = up;
      pl = lo;
    }
  }
}

// ---- Triple timeframe sync -----------------------------------------------------------------------

/** EMA trend of one timeframe built from base bars: a bar completes every `mult` base bars. */
class TimeframeTrend {
  private readonly fast: EMA;
  private readonly slow: EMA;
  /** 1 up, -1 down, 0 level; 0 until the slow EMA exists. */
  trend = 0;
  constructor(
    fast: number,
    slow: number,
    private readonly mult: number,
    private readonly barsPerSession: number,
  ) {
    this.fast = new EMA(fast);
    this.slow = new EMA(slow);
  }
  /** Feeds one base bar's close; its higher bar completes at a multiple of `mult` or at the session end. */
  push(c: number, pos: number): void {
    if ((pos + 1) % this.mult !== 0 && pos !== this.barsPerSession - 1) return;
    const f = this.fast.update(c);
    const s = this.slow.update(c);
    this.trend = sideOf(f, s, s);
  }
}

export class TripleSync implements StrategyRun {
  private readonly tfs: TimeframeTrend[];
  private aligned = 0;
  constructor(
    private readonly p: Record<string, number>,
    private readonly bps: number,
  ) {
    const barsPerSession = bps;
    this.tfs = [1, p.mid!, p.high!].map((m) => new TimeframeTrend(p.fast!, p.slow!, m, barsPerSession));
  }
  next(_o: number, _h: number, _l: number, c: number, _v: number, _s: number, pos: number): number {
    const [a, b, d] = this.tfs as [TimeframeTrend, TimeframeTrend, TimeframeTrend];
    a.push(c, pos);
    b.push(c, pos);
    d.push(c, pos);
    const now = alignment(a.trend, b.trend, d.trend);
    const was = this.aligned;
    this.aligned = now;
    return alignmentAction(now, was);
  }
  /**
   * Batch (a fresh instance): the three timeframes' EMAs in locals (the EMA class's arithmetic: SMA
   * seed, then value + alpha x (x - value)); the base timeframe completes on every bar.
   */
  fill(cs: Candles, from: number, to: number, out: Int8Array): void {
    const { c: C, pos: P } = cs;
    const nf = this.p.fast!;
    const ns = this.p.slow!;
    const mm = this.p.mid!;
    const mh = this.p.high!;
    const last = this.bps - 1;
    const af = 2 / (nf + 1);
    const as = 2 / (ns + 1);
    // per timeframe (a base, b mid, d high): fast/slow count, sum while seeding, value; trend
    let aFc = 0, aFs = 0, aF = NaN, aSc = 0, aSs = 0, aS = NaN, aT = 0;
    let bFc = 0, bFs = 0, bF = NaN, bSc = 0, bSs = 0, bS = NaN, bT = 0;
    let dFc = 0, dFs = 0, dF = NaN, dSc = 0, dSs = 0, dS = NaN, dT = 0;
    let aligned = 0;
    for (let i = from; i < to; i++) {
      const x = C[i]!;
      const p = P[i]!;
      // base
      if (aFc >= nf) aF = aF + af * (x - aF);
      else if (((aFs += x), ++aFc === nf)) aF = aFs / nf;
      if (aSc >= ns) aS = aS + as * (x - aS);
      else if (((aSs += x), ++aSc === ns)) aS = aSs / ns;
      aT = sideOf(aF, aS, aS);
      if ((p + 1) % mm === 0 || p === last) {
        if (bFc >= nf) bF = bF + af * (x - bF);
        else if (((bFs += x), ++bFc === nf)) bF = bFs / nf;
        if (bSc >= ns) bS = bS + as * (x - bS);
        else if (((bSs += x), ++bSc === ns)) bS = bSs / ns;
        bT = sideOf(bF, bS, bS);
      }
      if ((p + 1) % mh === 0 || p === last) {
        if (dFc >= nf) dF = dF + af * (x - dF);
        else if (((dFs += x), ++dFc === nf)) dF = dFs / nf;
        if (dSc >= ns) dS = dS + as * (x - dS);
        else if (((dSs += x), ++dSc === ns)) dS = dSs / ns;
        dT = sideOf(dF, dS, dS);
      }
      const now = alignment(aT, bT, dT);
      out[i] = alignmentAction(now, aligned);
      aligned = now;
    }
  }
}

/** Base bars until the highest timeframe has `slow` completed bars (counted from a session open). */
export function tripleWarmup(p: Record<string, number>, barsPerSession: number): number {
  const mult = p.high!;
  const perSession = Math.ceil(barsPerSession / mult); // higher bars per session (the last may be short)
  const sessions = Math.floor((p.slow! - 1) / perSession);
  const rest = p.slow! - sessions * perSession; // higher bars still needed in the last session
  // the index of the base bar that completes the slow-th higher bar: no action can come before it
  return sessions * barsPerSession + Math.min(rest * mult, barsPerSession) - 1;
}
