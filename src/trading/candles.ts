import { hash32, Rng } from './rng.js';
import {
  SESSION_MINUTES,
  SYMBOL_SPECS,
  TIMEFRAME_MINUTES,
  sessionOpenMs,
  type SymbolId,
  type Timeframe,
} from './symbols.js';

/** Column-oriented candles (typed arrays: the hot loops read these). */
export interface Candles {
  symbol: SymbolId;
  timeframe: Timeframe;
  /** Minutes per bar. */
  minutes: number;
  /** Bars per session (1380 / minutes). */
  barsPerSession: number;
  n: number;
  /** Bar open time, ms since the epoch. */
  t: Float64Array;
  o: Float64Array;
  h: Float64Array;
  l: Float64Array;
  c: Float64Array;
  v: Float64Array;
  /** Session index (0 = trading day 2024-01-01). */
  session: Int32Array;
  /** Index of the bar inside its session (0 = first bar after the open). */
  pos: Int32Array;
}

export interface CandleSpec {
  seed: number;
  symbol: SymbolId;
  timeframe: Timeframe;
  count: number;
  /** A trader's data set instead of the synthetic series (docs/trading.md "Data sets"): its id and hash. */
  dataset?: string;
  hash?: string;
  /** The data set's bars, shared with the worker threads (never copied): see `sharedCandles`. */
  data?: SharedArrayBuffer;
}

/** The spec as an answer names the candles: everything but the shared bytes. */
export function specJson(spec: CandleSpec): Omit<CandleSpec, 'data'> {
  const { data: _d, ...rest } = spec;
  return rest;
}

/** Largest candle count one request may ask for. */
export const MAX_CANDLES = 1_000_000;
/** Largest number of one-minute bars generated under one request (count x minutes per bar). */
export const MAX_BASE_MINUTES = 12_000_000;

/** Model constants (per one-minute bar). */
const GARCH_ALPHA = 0.06;
const GARCH_BETA = 0.93;
/** Mean reversion speed toward the symbol's level: half-life about 35,000 minutes (25 sessions). */
const KAPPA = 2e-5;
/** Wick size relative to the bar's sigma. */
const WICK = 0.6;

export function emptyCandles(symbol: SymbolId, timeframe: Timeframe, n: number): Candles {
  const minutes = TIMEFRAME_MINUTES[timeframe];
  return {
    symbol,
    timeframe,
    minutes,
    barsPerSession: SESSION_MINUTES / minutes,
    n,
    t: new Float64Array(n),
    o: new Float64Array(n),
    h: new Float64Array(n),
    l: new Float64Array(n),
    c: new Float64Array(n),
    v: new Float64Array(n),
    session: new Int32Array(n),
    pos: new Int32Array(n),
  };
}

/**
 * Deterministic synthetic candles. One-minute bars come from a random walk with mean reversion
 * toward the symbol's price level and GARCH(1,1) volatility clustering, a gap at each session open
 * (larger after a weekend), wicks scaled by the bar's volatility, prices on the tick grid, integer
 * volumes. A higher timeframe is the exact aggregation of the same one-minute stream (open = first,
 * high = max, low = min, close = last, volume = sum), so `generate(seed, 5m, n)` equals
 * `aggregate(generate(seed, 1m, 5n), 5)` bar for bar. Only +, -, *, /, sqrt and Math.round touch
 * doubles: the same seed gives the same bytes on every machine.
 */
export function generateCandles(spec: CandleSpec): Candles {
  const { seed, symbol, timeframe, count } = spec;
  const sym = SYMBOL_SPECS[symbol];
  const out = emptyCandles(symbol, timeframe, count);
  const k = out.minutes;
  const rng = new Rng((seed ^ hash32(symbol)) >>> 0);
  const inv = sym.invTick;
  const level = sym.price;
  const barVar = (sym.dailyVol * sym.dailyVol) / SESSION_MINUTES;
  const omega = (1 - GARCH_ALPHA - GARCH_BETA) * barVar;
  const varMin = barVar * 0.2;
  const varMax = barVar * 25;
  const gapSd = Math.sqrt(barVar * 60);
  const weekendGapSd = Math.sqrt(barVar * 600);

  let p = level; // the unrounded price
  let s2 = barVar;
  let minute = 0; // minute of the session
  let session = 0;
  // every session's open time first: its millisecond arithmetic leaves the small-integer range after
  // a few weeks, and inside the bar loop that would throw the loop's optimised code away
  const opens = new Float64Array(Math.ceil((count * k) / SESSION_MINUTES) + 1);
  for (let s = 0; s < opens.length; s++) opens[s] = sessionOpenMs(s);
  const { t, o, h, l, c, v, session: sess, pos } = out;
  for (let i = 0; i < count; i++) {
    let bo = 0;
    let bh = -Infinity;
    let bl = Infinity;
    let bc = 0;
    let bv = 0;
    t[i] = opens[session]! + minute * 60_000;
    sess[i] = session;
    pos[i] = minute / k;
    for (let m = 0; m < k; m++) {
      if (minute === 0) {
        // (session > 0 first: both tests then run from the second session on)
        const sd = session > 0 && session % 5 === 0 ? weekendGapSd : gapSd;
        p = p * (1 + sd * rng.normal());
      }
      const sigma = Math.sqrt(s2);
      const z = rng.normal();
      const r = (KAPPA * (level - p)) / p + sigma * z;
      const next = p * (1 + r);
      const mo = Math.round(p * inv) / inv;
      const mc = Math.round(next * inv) / inv;
      const top = (next > p ? next : p) * (1 + sigma * WICK * rng.uniform());
      const bottom = (next < p ? next : p) * (1 - sigma * WICK * rng.uniform());
      let mh = Math.round(top * inv) / inv;
      let ml = Math.round(bottom * inv) / inv;
      if (mh < mo) mh = mo;
      if (mh < mc) mh = mc;
      if (ml > mo) ml = mo;
      if (ml > mc) ml = mc;
      const mv = Math.round(sym.minuteVolume * (0.5 + rng.uniform()) * (1 + (z < 0 ? -z : z))) + 1;
      s2 = omega + GARCH_ALPHA * r * r + GARCH_BETA * s2;
      if (s2 < varMin) s2 = varMin;
      else if (s2 > varMax) s2 = varMax;
      p = next;
      if (m === 0) bo = mo;
      if (mh > bh) bh = mh;
      if (ml < bl) bl = ml;
      bc = mc;
      bv += mv;
      minute++;
      if (minute === SESSION_MINUTES) {
        minute = 0;
        session++;
      }
    }
    o[i] = bo;
    h[i] = bh;
    l[i] = bl;
    c[i] = bc;
    v[i] = bv;
  }
  return out;
}

/** Aggregates bars `factor` at a time (the factor must divide the bars per session). */
export function aggregateCandles(src: Candles, timeframe: Timeframe): Candles {
  const factor = TIMEFRAME_MINUTES[timeframe] / src.minutes;
  if (!Number.isInteger(factor) || src.barsPerSession % factor !== 0) {
    throw new Error(`cannot aggregate ${src.timeframe} into ${timeframe}`);
  }
  const n = Math.floor(src.n / factor);
  const out = emptyCandles(src.symbol, timeframe, n);
  for (let i = 0; i < n; i++) {
    const a = i * factor;
    let hi = -Infinity;
    let lo = Infinity;
    let vol = 0;
    for (let j = a; j < a + factor; j++) {
      if (src.h[j]! > hi) hi = src.h[j]!;
      if (src.l[j]! < lo) lo = src.l[j]!;
      vol += src.v[j]!;
    }
    out.t[i] = src.t[a]!;
    out.o[i] = src.o[a]!;
    out.h[i] = hi;
    out.l[i] = lo;
    out.c[i] = src.c[a + factor - 1]!;
    out.v[i] = vol;
    out.session[i] = src.session[a]!;
    out.pos[i] = src.pos[a]! / factor;
  }
  return out;
}

/** Bars [from, to) as views (no copy). */
export function sliceCandles(src: Candles, from: number, to: number): Candles {
  return {
    ...src,
    n: to - from,
    t: src.t.subarray(from, to),
    o: src.o.subarray(from, to),
    h: src.h.subarray(from, to),
    l: src.l.subarray(from, to),
    c: src.c.subarray(from, to),
    v: src.v.subarray(from, to),
    session: src.session.subarray(from, to),
    pos: src.pos.subarray(from, to),
  };
}

/** FNV-1a over the bytes of o, h, l, c, v: names a candle set in results ("identical candles"). */
export function candleChecksum(cs: Candles): string {
  let h = 0x811c9dc5;
  for (const arr of [cs.t, cs.o, cs.h, cs.l, cs.c, cs.v]) {
    const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
    for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/** Small cache: a worker that runs several chunks of one grid generates the candles once. */
let cached: { key: string; candles: Candles } | undefined;
export function candlesFor(spec: CandleSpec): Candles {
  const key = spec.data ? `data|${spec.hash}` : `${spec.seed}|${spec.symbol}|${spec.timeframe}|${spec.count}`;
  if (cached?.key === key) return cached.candles;
  const candles = spec.data ? candlesOfShared(spec.data, spec.symbol, spec.timeframe) : generateCandles(spec);
  cached = { key, candles };
  return candles;
}

/** Candles as JSON rows (tests, small examples). */
export function candleRows(cs: Candles): { t: number; o: number; h: number; l: number; c: number; v: number }[] {
  const rows = [];
  for (let i = 0; i < cs.n; i++) rows.push({ t: cs.t[i]!, o: cs.o[i]!, h: cs.h[i]!, l: cs.l[i]!, c: cs.c[i]!, v: cs.v[i]! });
  return rows;
}

/** Builds candles from given rows (tests and hand-made series): one session unless told. */
export function candlesFromRows(
  symbol: SymbolId,
  rows: { o: number; h: number; l: number; c: number; v?: number; session?: number }[],
  timeframe: Timeframe = '1m',
): Candles {
  const out = emptyCandles(symbol, timeframe, rows.length);
  let lastSession = -1;
  let p = 0;
  rows.forEach((r, i) => {
    const s = r.session ?? 0;
    if (s !== lastSession) {
      lastSession = s;
      p = 0;
    }
    out.t[i] = sessionOpenMs(s) + p * out.minutes * 60_000;
    out.o[i] = r.o;
    out.h[i] = r.h;
    out.l[i] = r.l;
    out.c[i] = r.c;
    out.v[i] = r.v ?? 1;
    out.session[i] = s;
    out.pos[i] = p++;
  });
  return out;
}

const DAY = 86_400_000;
const HOUR = 3_600_000;
const EPOCH_DAY = Date.UTC(2024, 0, 1) / DAY;

/**
 * The session of a bar opening at `t` on the engine's calendar: its trading day is the UTC date of
 * t + 1 h (a session opens at 23:00 UTC the evening before), Monday to Friday; a Saturday or Sunday
 * trading day counts with the Monday after it.
 */
export function sessionOfTime(t: number): number {
  const d = Math.floor((t + HOUR) / DAY) - EPOCH_DAY;
  const week = Math.floor(d / 7);
  const r = d - week * 7;
  return week * 5 + (r < 5 ? r : 5);
}

/**
 * A data set's bars in one SharedArrayBuffer the worker threads read without a copy: six Float64
 * columns of n (t o h l c v, as stored), then two Int32 columns (session, index of the bar in its
 * session counted from the session's first bar in the data).
 */
export function sharedCandles(columns: Float64Array, n: number): SharedArrayBuffer {
  const sab = new SharedArrayBuffer(n * 6 * 8 + n * 2 * 4);
  new Float64Array(sab, 0, n * 6).set(columns.subarray(0, n * 6));
  const t = new Float64Array(sab, 0, n);
  const session = new Int32Array(sab, n * 48, n);
  const pos = new Int32Array(sab, n * 52, n);
  let p = 0;
  for (let i = 0; i < n; i++) {
    session[i] = sessionOfTime(t[i]!);
    p = i > 0 && session[i] === session[i - 1] ? p + 1 : 0;
    pos[i] = p;
  }
  return sab;
}

/** Candles viewing a SharedArrayBuffer made by `sharedCandles`. */
export function candlesOfShared(sab: SharedArrayBuffer, symbol: SymbolId, timeframe: Timeframe): Candles {
  const n = sab.byteLength / 56;
  const minutes = TIMEFRAME_MINUTES[timeframe];
  const col = (k: number) => new Float64Array(sab, k * n * 8, n);
  return {
    symbol,
    timeframe,
    minutes,
    barsPerSession: SESSION_MINUTES / minutes,
    n,
    t: col(0),
    o: col(1),
    h: col(2),
    l: col(3),
    c: col(4),
    v: col(5),
    session: new Int32Array(sab, n * 48, n),
    pos: new Int32Array(sab, n * 52, n),
  };
}
