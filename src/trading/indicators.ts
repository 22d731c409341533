/**
 * The seven indicators (EMA, SMA, RSI, MACD, Bollinger Bands, ATR, VWAP), TA-Lib definitions
 * (shared/ANCHORS.md). Each is a streaming class: `update(...)` takes the next bar in O(1) and returns
 * the newest value, NaN while warming up. Batch series come from the same classes through
 * `series()` / the *Series helpers, so the streaming and batch paths cannot disagree.
 */

/** A single-input indicator. */
export interface Streaming {
  /** Bars needed before the first value (the index of the first output). */
  readonly lookback: number;
  update(x: number): number;
}

/** Runs a streaming indicator over a whole series: the batch helper every batch path uses. */
export function series(ind: Streaming, xs: ArrayLike<number>, out = new Float64Array(xs.length)): Float64Array {
  for (let i = 0; i < xs.length; i++) out[i] = ind.update(xs[i]!);
  return out;
}

/** Every RESYNC updates a windowed sum is recomputed from its window, so rounding never drifts. */
export const RESYNC = 4096;

/** Simple moving average over n values; first output at index n-1. */
export class SMA implements Streaming {
  readonly lookback: number;
  private readonly buf: Float64Array;
  private i = 0;
  private count = 0;
  private sum = 0;
  private sinceSync = 0;
  value = NaN;

  constructor(readonly n: number) {
    this.buf = new Float64Array(n);
    this.lookback = n - 1;
  }

  update(x: number): number {
    const n = this.n;
    const old = this.buf[this.i]!;
    this.buf[this.i] = x;
    this.i = this.i + 1 === n ? 0 : this.i + 1;
    if (this.count < n) {
      this.count++;
      this.sum += x;
      if (this.count < n) return NaN;
    } else if (++this.sinceSync === RESYNC) {
      this.sinceSync = 0;
      let s = 0;
      for (let j = 0; j < n; j++) s += this.buf[j]!;
      this.sum = s;
    } else {
      this.sum += x - old;
    }
    return (this.value = this.sum / n);
  }
}

/** EMA: alpha = 2/(n+1), seeded with the SMA of the first n values; first output at index n-1. */
export class EMA implements Streaming {
  readonly lookback: number;
  private readonly alpha: number;
  private count = 0;
  private acc = 0;
  value = NaN;

  constructor(readonly n: number) {
    this.alpha = 2 / (n + 1);
    this.lookback = n - 1;
  }

  update(x: number): number {
    if (this.count >= this.n) return (this.value = this.value + this.alpha * (x - this.value));
    this.acc += x;
    if (++this.count < this.n) return NaN;
    return (this.value = this.acc / this.n);
  }
}

/**
 * RSI (Wilder): the first n changes seed the average gain and loss (their means); first output at
 * index n; then avg = (prev*(n-1) + x)/n; RSI = 100 - 100/(1 + G/L), 100 when L = 0 (and 50 when
 * both are 0: a flat series has no direction).
 */
export class RSI implements Streaming {
  readonly lookback: number;
  private prev = NaN;
  private count = 0;
  private gain = 0;
  private loss = 0;
  value = NaN;

  constructor(readonly n: number) {
    this.lookback = n;
  }

  update(x: number): number {
    const prev = this.prev;
    this.prev = x;
    if (prev !== prev) return NaN; // first value: no change yet
    const d = x - prev;
    const g = d > 0 ? d : 0;
    const l = d < 0 ? -d : 0;
    const n = this.n;
    if (this.count < n) {
      this.gain += g;
      this.loss += l;
      if (++this.count < n) return NaN;
      this.gain /= n;
      this.loss /= n;
    } else {
      this.gain = (this.gain * (n - 1) + g) / n;
      this.loss = (this.loss * (n - 1) + l) / n;
    }
    const G = this.gain;
    const L = this.loss;
    return (this.value = L === 0 ? (G === 0 ? 50 : 100) : 100 - 100 / (1 + G / L));
  }
}

/**
 * MACD: EMA(fast) - EMA(slow), each seeded as EMA above (first MACD at index slow-1); signal =
 * EMA(signal) of the MACD series from its first value (first at slow+signal-2); histogram =
 * MACD - signal. `update` returns the MACD line; `signal` and `histogram` hold the others.
 */
export class MACD implements Streaming {
  readonly lookback: number;
  private readonly fastE: EMA;
  private readonly slowE: EMA;
  private readonly signalE: EMA;
  value = NaN;
  signal = NaN;
  histogram = NaN;

  constructor(fast = 12, slow = 26, signal = 9) {
    this.fastE = new EMA(fast);
    this.slowE = new EMA(slow);
    this.signalE = new EMA(signal);
    this.lookback = slow - 1;
  }

  update(x: number): number {
    const f = this.fastE.update(x);
    const s = this.slowE.update(x);
    if (s !== s) return NaN;
    const m = f - s;
    this.value = m;
    this.signal = this.signalE.update(m);
    this.histogram = m - this.signal;
    return m;
  }
}

/**
 * Bollinger Bands: SMA(n) +/- k * population sigma of the same n values. `update` returns the middle
 * band; `upper`, `lower` hold the bands. Sums are kept relative to the first value (smaller
 * magnitudes, less cancellation) and recomputed from the window every RESYNC updates.
 */
export class Bollinger implements Streaming {
  readonly lookback: number;
  private readonly buf: Float64Array;
  private i = 0;
  private count = 0;
  private ref = NaN;
  private sum = 0;
  private sumSq = 0;
  private sinceSync = 0;
  value = NaN;
  upper = NaN;
  lower = NaN;
  sd = NaN;

  constructor(
    readonly n = 20,
    readonly k = 2,
  ) {
    this.buf = new Float64Array(n);
    this.lookback = n - 1;
  }

  update(x0: number): number {
    if (this.ref !== this.ref) this.ref = x0;
    const x = x0 - this.ref;
    const n = this.n;
    const old = this.buf[this.i]!;
    this.buf[this.i] = x;
    this.i = this.i + 1 === n ? 0 : this.i + 1;
    if (this.count < n) {
      this.count++;
      this.sum += x;
      this.sumSq += x * x;
      if (this.count < n) return NaN;
    } else if (++this.sinceSync === RESYNC) {
      this.sinceSync = 0;
      let s = 0;
      let q = 0;
      for (let j = 0; j < n; j++) {
        const b = this.buf[j]!;
        s += b;
        q += b * b;
      }
      this.sum = s;
      this.sumSq = q;
    } else {
      this.sum += x - old;
      this.sumSq += x * x - old * old;
    }
    const mean = this.sum / n;
    let variance = this.sumSq / n - mean * mean;
    if (variance < 0) variance = 0;
    const sd = Math.sqrt(variance);
    const mid = mean + this.ref;
    this.sd = sd;
    this.upper = mid + this.k * sd;
    this.lower = mid - this.k * sd;
    return (this.value = mid);
  }
}

/**
 * ATR (Wilder): TR_i = max(H-L, |H-C_{i-1}|, |L-C_{i-1}|) for i >= 1 (bar 0 has no previous close and
 * gives no TR); seed = mean(TR_1..TR_n), first output at index n; then (prev*(n-1) + TR)/n.
 */
export class ATR {
  readonly lookback: number;
  private prevClose = NaN;
  private count = 0;
  private acc = 0;
  value = NaN;

  constructor(readonly n = 14) {
    this.lookback = n;
  }

  update(h: number, l: number, c: number): number {
    const pc = this.prevClose;
    this.prevClose = c;
    if (pc !== pc) return NaN;
    let tr = h - l;
    const a = h > pc ? h - pc : pc - h;
    const b = l > pc ? l - pc : pc - l;
    if (a > tr) tr = a;
    if (b > tr) tr = b;
    const n = this.n;
    if (this.count >= n) return (this.value = (this.value * (n - 1) + tr) / n);
    this.acc += tr;
    if (++this.count < n) return NaN;
    return (this.value = this.acc / n);
  }
}

/**
 * VWAP = sum(TP*V)/sum(V), TP = (H+L+C)/3, reset at each session open (pass the bar's session id).
 * Defined from the first bar of every session; equals TP while the session's volume is still 0.
 */
export class VWAP {
  readonly lookback = 0;
  private session = NaN;
  private pv = 0;
  private vol = 0;
  value = NaN;

  update(h: number, l: number, c: number, v: number, session: number): number {
    if (session !== this.session) {
      this.session = session;
      this.pv = 0;
      this.vol = 0;
    }
    const tp = (h + l + c) / 3;
    this.pv += tp * v;
    this.vol += v;
    return (this.value = this.vol > 0 ? this.pv / this.vol : tp);
  }
}

/**
 * Highest value of the last n inputs (monotonic deque in a ring: amortised O(1)). Used by the
 * breakout strategy (Donchian channel); not one of the seven.
 */
export class RollingExtreme {
  private readonly idx: Int32Array;
  private readonly val: Float64Array;
  private head = 0;
  private size = 0;
  private i = 0;
  private readonly cap: number;

  constructor(
    readonly n: number,
    private readonly max: boolean,
  ) {
    this.cap = n + 1;
    this.idx = new Int32Array(this.cap);
    this.val = new Float64Array(this.cap);
  }

  /** Adds x; returns the extreme of the last n values, NaN until n values were seen. */
  update(x: number): number {
    const cap = this.cap;
    // drop dominated values from the back
    while (this.size > 0) {
      const back = (this.head + this.size - 1) % cap;
      const b = this.val[back]!;
      if (this.max ? b <= x : b >= x) this.size--;
      else break;
    }
    const slot = (this.head + this.size) % cap;
    this.idx[slot] = this.i;
    this.val[slot] = x;
    this.size++;
    // drop values that left the window from the front
    if (this.idx[this.head]! <= this.i - this.n) {
      this.head = (this.head + 1) % cap;
      this.size--;
    }
    this.i++;
    return this.i >= this.n ? this.val[this.head]! : NaN;
  }
}

// ---- batch helpers (the same classes, run over whole series) --------------------------------

export const smaSeries = (xs: ArrayLike<number>, n: number) => series(new SMA(n), xs);
export const emaSeries = (xs: ArrayLike<number>, n: number) => series(new EMA(n), xs);
export const rsiSeries = (xs: ArrayLike<number>, n: number) => series(new RSI(n), xs);

export function macdSeries(xs: ArrayLike<number>, fast = 12, slow = 26, signal = 9) {
  const m = new MACD(fast, slow, signal);
  const len = xs.length;
  const macd = new Float64Array(len);
  const sig = new Float64Array(len);
  const hist = new Float64Array(len);
  for (let i = 0; i < len; i++) {
    macd[i] = m.update(xs[i]!);
    sig[i] = macd[i] === macd[i] ? m.signal : NaN;
    hist[i] = macd[i] === macd[i] ? m.histogram : NaN;
  }
  return { macd, signal: sig, histogram: hist };
}

export function bollingerSeries(xs: ArrayLike<number>, n = 20, k = 2) {
  const b = new Bollinger(n, k);
  const len = xs.length;
  const middle = new Float64Array(len);
  const upper = new Float64Array(len);
  const lower = new Float64Array(len);
  for (let i = 0; i < len; i++) {
    middle[i] = b.update(xs[i]!);
    upper[i] = middle[i] === middle[i] ? b.upper : NaN;
    lower[i] = middle[i] === middle[i] ? b.lower : NaN;
  }
  return { middle, upper, lower };
}

export function atrSeries(h: ArrayLike<number>, l: ArrayLike<number>, c: ArrayLike<number>, n = 14): Float64Array {
  const a = new ATR(n);
  const out = new Float64Array(c.length);
  for (let i = 0; i < c.length; i++) out[i] = a.update(h[i]!, l[i]!, c[i]!);
  return out;
}

export function vwapSeries(
  h: ArrayLike<number>,
  l: ArrayLike<number>,
  c: ArrayLike<number>,
  v: ArrayLike<number>,
  session: ArrayLike<number>,
): Float64Array {
  const w = new VWAP();
  const out = new Float64Array(c.length);
  for (let i = 0; i < c.length; i++) out[i] = w.update(h[i]!, l[i]!, c[i]!, v[i]!, session[i]!);
  return out;
}
