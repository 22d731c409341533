/**
 * The five strategies' rules, each written once (docs/trading.md "Strategies"). A rule turns this
 * bar's indicator values (and the previous bar's) into an action, which the engine fills at the next
 * bar's open. Every path a strategy runs on calls the same rule and differs only in where the values
 * come from: the streaming run of a live program (strategy-runs.ts `next`: the indicator classes),
 * a backtest's fill (`fill`: the same arithmetic in locals) and a grid's loop over indicator series
 * shared by its combinations (batch.ts). The three give the same actions bar for bar
 * (test/trading/batch.test.ts, test/rules/trading-strategies.rules.test.ts).
 */
/**
 * The actions, inlined by the compiler as numbers into the rules below (a rule that reads a
 * module-level constant on every bar is not inlined into the hot loops that call it).
 */
const enum Action {
  NONE = 0,
  LONG = 1,
  SHORT = -1,
  /** Close every open position (no new one). */
  EXIT = 2,
}
export const NONE: number = Action.NONE;
export const LONG: number = Action.LONG;
export const SHORT: number = Action.SHORT;
/** Close every open position (no new one). */
export const EXIT: number = Action.EXIT;

/**
 * Where `x` stands against a band: 1 above `hi`, -1 below `lo`, 0 inside or on it (and 0 while either
 * is NaN, before an indicator exists). A breakout's side of its channel, and a trend: fast EMA
 * against slow (`sideOf(fast, slow, slow)`).
 */
export const sideOf = (x: number, hi: number, lo: number): number => (x > hi ? 1 : x < lo ? -1 : 0);

/** EMA cross, on `d` = EMA(fast) - EMA(slow) at this bar and the bar before: long when it passes above 0, short below. */
export const crossAction = (d: number, prev: number): number => (d > 0 && prev <= 0 ? Action.LONG : d < 0 && prev >= 0 ? Action.SHORT : Action.NONE);

/** RSI rebound: long when the RSI rises from under `oversold` to it or above, short when it falls from over `overbought` to it or below. */
export const reboundAction = (rsi: number, prev: number, oversold: number, overbought: number): number =>
  prev < oversold && rsi >= oversold ? Action.LONG : prev > overbought && rsi <= overbought ? Action.SHORT : Action.NONE;

/** Breakout, on the close's side of the previous bars' channel (sideOf) now and at the bar before: acted on when it turns long or short. */
export const breakoutAction = (side: number, was: number): number => (side === 1 && was !== 1 ? Action.LONG : side === -1 && was !== -1 ? Action.SHORT : Action.NONE);

/**
 * Mean reversion on the Bollinger bands: a close that falls under the lower band (from at or above
 * it) is long, one over the upper band short (a return to the mean is expected); a close that
 * crosses the middle band back is an exit. `p*` are the previous bar's close and bands.
 */
export function reversionAction(c: number, mid: number, up: number, lo: number, pc: number, pm: number, pu: number, pl: number): number {
  if (c < lo && pc >= pl) return Action.LONG;
  if (c > up && pc <= pu) return Action.SHORT;
  if ((pc < pm && c >= mid) || (pc > pm && c <= mid)) return Action.EXIT;
  return Action.NONE;
}

/** Triple sync: the trend all three timeframes agree on (1 or -1), else 0. A trend is 0 until its slow EMA exists. */
export const alignment = (base: number, mid: number, high: number): number => (base === mid && mid === high ? base : 0);

/** Triple sync: a change of the alignment is long, short, or an exit when it ends at 0. */
export const alignmentAction = (now: number, was: number): number => (now === was ? Action.NONE : now === 1 ? Action.LONG : now === -1 ? Action.SHORT : Action.EXIT);
