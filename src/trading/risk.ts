/**
 * The risk controls of a program (document 2: daily loss limit, maximum positions, daily trade
 * limit, schedule), one set of rules for the streaming engine (engine.ts), its batch loop
 * (engine-batch.ts) and the live program that reports a refused entry (program-runner.ts).
 *
 * - Daily loss limit: once a session's realized P&L is at or below minus the limit, the session is
 *   halted: open positions are flattened at the next open and no entry is taken until the next
 *   session; a live program is stopped.
 * - Maximum positions: a same-direction signal adds a position only while fewer are open.
 * - Daily trade limit: entries per session.
 * - Schedule: an entry fills only when its bar opens inside [start, end) UTC (a window may cross
 *   midnight) on a listed weekday of the trading day, which starts at 23:00 UTC the evening before.
 */

/** The settings the risk controls read (engine-settings.ts, defaults applied). */
export interface RiskSettings {
  daily_loss_limit?: number | undefined;
  max_positions: number;
  daily_trade_limit?: number | undefined;
  schedule?: { start: string; end: string; days: number[] } | undefined;
}

/** The limits as numbers: an absent one is Infinity. */
export interface RiskLimits {
  maxPositions: number;
  dayLossLimit: number;
  dayTradeLimit: number;
}

export function riskLimits(settings: RiskSettings): RiskLimits {
  return {
    maxPositions: settings.max_positions,
    dayLossLimit: settings.daily_loss_limit ?? Infinity,
    dayTradeLimit: settings.daily_trade_limit ?? Infinity,
  };
}

/** The day's realized P&L reached the daily loss limit ("at or above the limit" as a loss). */
export const dayLossReached = (dayPnl: number, dayLossLimit: number): boolean => dayPnl <= -dayLossLimit;

const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * Whether an entry may fill at a bar opening at `t` (ms since the epoch, UTC): null when the run has
 * no schedule (every bar may).
 */
export function scheduleTest(settings: RiskSettings): ((t: number) => boolean) | null {
  const sched = settings.schedule;
  if (!sched) return null;
  const a = minutes(sched.start);
  const b = minutes(sched.end);
  const days = sched.days.reduce((m, d) => m | (1 << d), 0);
  return (t: number) => {
    // the trading day a bar belongs to: a session opens at 23:00 UTC the evening before
    const tradingDay = Math.floor((t + HOUR_MS) / DAY_MS);
    // 1970-01-01 was a Thursday (4)
    if (((days >> ((tradingDay + 4) % 7)) & 1) === 0) return false;
    const m = Math.floor((t % DAY_MS) / 60_000);
    return a <= b ? m >= a && m < b : m >= a || m < b;
  };
}

export type EntryBlock = 'daily_trade_limit' | 'max_positions' | 'schedule' | 'risk';

/**
 * Why an entry signal did not fill, as a live program logs it: the daily trade limit when the
 * session's entries reached it, else the maximum positions when the signal would have added to as
 * many open in its direction, else the schedule when there is one, else the daily loss halt.
 */
export function entryBlock(
  settings: RiskSettings,
  dayTrades: number,
  sameDirection: boolean,
  openBefore: number,
): { code: EntryBlock; detail: string } {
  const tradeLimit = settings.daily_trade_limit;
  if (tradeLimit !== undefined && dayTrades >= tradeLimit) return { code: 'daily_trade_limit', detail: `${dayTrades} of ${tradeLimit} entries today` };
  if (sameDirection && openBefore >= settings.max_positions) return { code: 'max_positions', detail: `${openBefore} of ${settings.max_positions} positions open` };
  const s = settings.schedule;
  if (s) return { code: 'schedule', detail: `outside ${s.start}-${s.end} UTC on days ${s.days.join(',')}` };
  return { code: 'risk', detail: 'refused by the engine' };
}
