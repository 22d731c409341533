import { z } from 'zod';

/**
 * The engine's settings and what it reports (fills, its book), apart from the engine itself so that
 * routes, programs and the payment relay read them without the simulation code.
 */

/** Execution and risk settings of a run (backtest or live program). Every field has a default. */
const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (UTC)');
export const MAX_POSITIONS = 10;
export const settingsSchema = z
  .strictObject({
    /** Starting equity, USD. */
    capital: z.number().positive().max(1e12).default(100_000),
    /** Contracts per position. */
    contracts: z.number().int().min(1).max(1000).default(1),
    /** Adverse ticks on every market fill (entries, signal exits, stop-loss exits); none on take-profit. */
    slippage_ticks: z.number().min(0).max(100).default(1),
    /** USD per contract per side. */
    commission: z.number().min(0).max(1000).default(2.5),
    /** Stop-loss distance in ATR multiples (0 = none); stop_loss_points wins when given. */
    stop_loss_atr: z.number().min(0).max(50).default(2),
    take_profit_atr: z.number().min(0).max(50).default(3),
    stop_loss_points: z.number().positive().max(1e6).optional(),
    take_profit_points: z.number().positive().max(1e6).optional(),
    atr_period: z.number().int().min(2).max(200).default(14),
    /** USD; when the day's realized loss reaches it, flatten and take no entry until the next session. */
    daily_loss_limit: z.number().positive().max(1e12).optional(),
    /** Open positions at once (a same-direction signal adds one up to this). */
    max_positions: z.number().int().min(1).max(MAX_POSITIONS).default(1),
    /** Entries per session. */
    daily_trade_limit: z.number().int().min(1).max(100_000).optional(),
    /** Entries only when the fill bar opens inside [start, end) UTC on the listed weekdays (0 = Sunday). */
    schedule: z
      .strictObject({
        start: hhmm,
        end: hhmm,
        days: z.array(z.number().int().min(0).max(6)).min(1).max(7).default([1, 2, 3, 4, 5]),
      })
      .optional(),
  })
  .prefault({});
export type Settings = z.output<typeof settingsSchema>;
export const defaultSettings = (): Settings => settingsSchema.parse(undefined);

export const REASONS = ['signal', 'stop_loss', 'take_profit', 'risk', 'end'] as const;
export type ExitReason = (typeof REASONS)[number];
export interface FillEvent {
  bar: number;
  t: number;
  /** 'entry' or 'exit'. */
  kind: 'entry' | 'exit';
  side: 'buy' | 'sell';
  price: number;
  contracts: number;
  reason?: ExitReason;
  /** Net P&L of the closed trade (exits only), USD. */
  pnl?: number;
}


/** See Engine.snapshot. Levels are null when not set (JSON has no NaN). */
export interface EngineBook {
  dir: number;
  positions: { entry: number; sl: number | null; tp: number | null; bar: number }[];
  pend: number;
  pend_sl: number;
  pend_tp: number;
  flatten: boolean;
  halted: boolean;
  day: number;
  day_pnl: number;
  day_trades: number;
}
