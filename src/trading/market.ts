import { emptyCandles, generateCandles, type Candles } from './candles.js';
import { SESSION_MINUTES, type SymbolId } from './symbols.js';

/**
 * The live simulated market of one symbol. Market bar k spans hub-clock time [k x barMs, (k+1) x
 * barMs) and closes at (k+1) x barMs. Its prices are a pure function of k, so every process sees
 * the same market without talking: they come from the deterministic candle generator (one-minute
 * bars, seed MARKET_SEED, BASE_BARS of them) played forward and then backward (a backward bar swaps
 * open and close), over and over, so the series never jumps. A market session (the engine's day:
 * daily loss and trade limits reset) is SESSION_MINUTES (1,380) bars, like the generator's.
 *
 * Closed bars are written into a ring of RING slots shared by every live program on the symbol: a
 * program's Engine steps on slot k mod RING right after the market writes it. Slot RING is a
 * scratch slot where the last bar is copied when a program is flattened (Engine.finish).
 */
export const MARKET_SEED = 1;
export const BASE_BARS = SESSION_MINUTES * 20;
export const RING = 1024;

export interface Bar {
  t: number;
  o: number;
  h: number;
  l: number;
  c: number;
  v: number;
  session: number;
  pos: number;
}

export class Market {
  /** The ring (RING + 1 slots) every live engine on this symbol reads. */
  readonly ring: Candles;
  private readonly base: Candles;
  /** Last closed bar written into the ring (-1: none yet). */
  last = -1;

  constructor(
    readonly symbol: SymbolId,
    readonly barMs: number,
  ) {
    this.base = generateCandles({ seed: MARKET_SEED, symbol, timeframe: '1m', count: BASE_BARS });
    this.ring = emptyCandles(symbol, '1m', RING + 1);
  }

  /** Index of the last bar closed at clock time `now`. */
  closedAt(now: number): number {
    return Math.floor(now / this.barMs) - 1;
  }

  /** Bar k (pure). */
  bar(k: number): Bar {
    const b = this.base;
    const period = 2 * BASE_BARS;
    const j = ((k % period) + period) % period;
    const fwd = j < BASE_BARS;
    const i = fwd ? j : period - 1 - j;
    return {
      t: k * this.barMs,
      o: fwd ? b.o[i]! : b.c[i]!,
      h: b.h[i]!,
      l: b.l[i]!,
      c: fwd ? b.c[i]! : b.o[i]!,
      v: b.v[i]!,
      session: Math.floor(k / SESSION_MINUTES),
      pos: ((k % SESSION_MINUTES) + SESSION_MINUTES) % SESSION_MINUTES,
    };
  }

  /** Writes bar k into its ring slot (or the scratch slot) and returns the slot. */
  write(k: number, slot = k % RING): number {
    const b = this.bar(k);
    const r = this.ring;
    r.t[slot] = b.t;
    r.o[slot] = b.o;
    r.h[slot] = b.h;
    r.l[slot] = b.l;
    r.c[slot] = b.c;
    r.v[slot] = b.v;
    r.session[slot] = b.session;
    r.pos[slot] = b.pos;
    return slot;
  }

  /** Makes bars (to - count, to] present in the ring (a new program warms its engine on them). */
  fill(to: number, count: number): void {
    for (let k = Math.max(to - Math.min(count, RING - 1) + 1, 0); k <= to; k++) this.write(k);
    if (to > this.last) this.last = to;
  }
}

/** One Market per symbol, created on first use. */
export class Markets {
  private readonly bySymbol = new Map<SymbolId, Market>();
  constructor(readonly barMs: number) {}
  get(symbol: SymbolId): Market {
    let m = this.bySymbol.get(symbol);
    if (!m) this.bySymbol.set(symbol, (m = new Market(symbol, this.barMs)));
    return m;
  }
  all(): Market[] {
    return [...this.bySymbol.values()];
  }
}
