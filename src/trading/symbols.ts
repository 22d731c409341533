/**
 * The five symbols of the document (ES, NQ, CL, GC, 6E) with the constants the candle generator and
 * the engine need, and the session calendar they all share (CME Globex hours, fixed in UTC).
 */

export const SYMBOLS = ['ES', 'NQ', 'CL', 'GC', '6E'] as const;
export type SymbolId = (typeof SYMBOLS)[number];

export interface SymbolSpec {
  symbol: SymbolId;
  name: string;
  /** Price level the synthetic series starts at and reverts to. */
  price: number;
  /** Minimum price increment. */
  tick: number;
  /** 1 / tick, an integer: prices are stored as round(x * invTick) / invTick so JSON stays clean. */
  invTick: number;
  /** USD per 1.0 of price per contract (ANCHORS: ES $50, NQ $20, CL $1,000, GC $100, 6E $125,000). */
  pointValue: number;
  /** Typical daily (one session) volatility of returns, as a fraction. */
  dailyVol: number;
  /** Mean contracts traded per one-minute bar. */
  minuteVolume: number;
}

export const SYMBOL_SPECS: Record<SymbolId, SymbolSpec> = {
  ES: { symbol: 'ES', name: 'E-mini S&P 500', price: 5000, tick: 0.25, invTick: 4, pointValue: 50, dailyVol: 0.011, minuteVolume: 1500 },
  NQ: { symbol: 'NQ', name: 'E-mini Nasdaq-100', price: 17500, tick: 0.25, invTick: 4, pointValue: 20, dailyVol: 0.014, minuteVolume: 600 },
  CL: { symbol: 'CL', name: 'WTI Crude Oil', price: 75, tick: 0.01, invTick: 100, pointValue: 1000, dailyVol: 0.022, minuteVolume: 800 },
  GC: { symbol: 'GC', name: 'Gold', price: 2000, tick: 0.1, invTick: 10, pointValue: 100, dailyVol: 0.009, minuteVolume: 300 },
  '6E': { symbol: '6E', name: 'Euro FX', price: 1.09, tick: 0.00005, invTick: 20000, pointValue: 125000, dailyVol: 0.005, minuteVolume: 400 },
};

/** Timeframes: each divides the 1,380-minute session, so a higher bar never straddles two sessions. */
export const TIMEFRAMES = ['1m', '5m', '15m', '30m', '1h', '1d'] as const;
export type Timeframe = (typeof TIMEFRAMES)[number];
export const TIMEFRAME_MINUTES: Record<Timeframe, number> = { '1m': 1, '5m': 5, '15m': 15, '30m': 30, '1h': 60, '1d': 1380 };

/**
 * Sessions: CME Globex 17:00-16:00 Chicago time, fixed in UTC (no daylight saving) as 23:00 UTC of
 * the previous calendar day to 22:00 UTC: 1,380 one-minute bars, Monday to Friday trading days.
 * Session 0 is trading day Monday 2024-01-01 (opens Sunday 2023-12-31 23:00 UTC); holidays are not
 * modelled.
 */
export const SESSION_MINUTES = 1380;
export const SESSION_OPEN_OFFSET_MS = -3_600_000;
export const EPOCH_TRADING_DAY_MS = Date.UTC(2024, 0, 1);
const DAY_MS = 86_400_000;

/** 00:00 UTC of the trading day of session k (Mon-Fri, weekends skipped). */
export function tradingDayMs(session: number): number {
  const week = Math.floor(session / 5);
  return EPOCH_TRADING_DAY_MS + (week * 7 + (session - week * 5)) * DAY_MS;
}

/** Open time (ms) of session k. */
export function sessionOpenMs(session: number): number {
  return tradingDayMs(session) + SESSION_OPEN_OFFSET_MS;
}

/** 'YYYY-MM' of the trading day of session k (monthly performance groups by it). */
export function sessionMonth(session: number): string {
  return new Date(tradingDayMs(session)).toISOString().slice(0, 7);
}
