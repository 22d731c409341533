import { AppError } from '../errors.js';
import { UNIT } from './ledger.js';

/**
 * The payment relay's numbers and pure rules (docs/payment.md): the five challenge kinds, the
 * challenge engine's pass/fail rules, rounding per flow, and ISO weeks.
 */

export interface ChallengeKind {
  challenge_id: string;
  name: string;
  /** The trading account's size in USD. */
  account_size: number;
  /** Entry fee in token minor units (decimal string). */
  entry_fee: string;
}

const fee = (tokens: number) => (BigInt(tokens) * UNIT).toString();
export const CHALLENGES: ChallengeKind[] = [
  { challenge_id: 'starter_10k', name: 'Starter 10K', account_size: 10_000, entry_fee: fee(100) },
  { challenge_id: 'standard_25k', name: 'Standard 25K', account_size: 25_000, entry_fee: fee(200) },
  { challenge_id: 'advanced_50k', name: 'Advanced 50K', account_size: 50_000, entry_fee: fee(300) },
  { challenge_id: 'pro_100k', name: 'Pro 100K', account_size: 100_000, entry_fee: fee(500) },
  { challenge_id: 'elite_200k', name: 'Elite 200K', account_size: 200_000, entry_fee: fee(900) },
];
export const challengeKind = (id: string) => CHALLENGES.find((c) => c.challenge_id === id);

/** Pass and fail rules of a challenge, as fractions of the account size (configurable). */
export interface ChallengeRules {
  profitTarget: number;
  dailyLoss: number;
  maxDrawdown: number;
}
export const DEFAULT_RULES: ChallengeRules = { profitTarget: 0.08, dailyLoss: 0.05, maxDrawdown: 0.1 };

/** What the engine tracks of a challenge, in USD cents. */
export interface ChallengeStats {
  realized_cents: number;
  peak_cents: number;
  day: string;
  day_cents: number;
}

export type RuleOutcome = { outcome: 'pass' } | { outcome: 'fail'; rule: 'daily_loss' | 'max_drawdown' } | undefined;

/**
 * Checks the rules after a fill: a breached loss rule fails first, then the profit target passes.
 * Each rule is reached at or above its fraction of the account size, taken in whole cents (the
 * fraction to 6 places, rounded up to a cent) and not in floating point, where 0.07 x 2,500,000
 * cents is 175,000.00000000003 and an exact 7 % would fall short.
 */
export function evaluateRules(stats: ChallengeStats, accountSize: number, rules: ChallengeRules): RuleOutcome {
  const cents = BigInt(accountSize) * 100n;
  const reach = (fraction: number) => Number(mulDivUp(cents, ppm(fraction), 1_000_000n));
  if (-stats.day_cents >= reach(rules.dailyLoss)) return { outcome: 'fail', rule: 'daily_loss' };
  if (stats.peak_cents - stats.realized_cents >= reach(rules.maxDrawdown)) return { outcome: 'fail', rule: 'max_drawdown' };
  if (stats.realized_cents >= reach(rules.profitTarget)) return { outcome: 'pass' };
  return undefined;
}

// ---- rounding (one written rule per flow) --------------------------------------------------------

/** floor(amount * num / den) */
export const mulDivDown = (a: bigint, num: bigint, den: bigint) => (a * num) / den;
/** ceil(amount * num / den) */
export const mulDivUp = (a: bigint, num: bigint, den: bigint) => (a * num + den - 1n) / den;

/** Learning credit: entry fee x 0.3, rounded down (the unit left stays in escrow). */
export const learningCredit = (entryFee: bigint) => mulDivDown(entryFee, 3n, 10n);
/** Collateral: account size (USD) x 3 % x peg (tokens per USD), rounded up. */
export const collateralFor = (accountSizeUsd: number, pegPpm: bigint) => mulDivUp(BigInt(accountSizeUsd) * UNIT * pegPpm, 3n, 100n * 1_000_000n);
/** Off-ramp fee: 1.4 % of the amount, rounded up (in the banking service's favour). */
export const offrampFee = (amount: bigint) => mulDivUp(amount, 14n, 1000n);
/** A split: the platform share is rounded down; the trader gets the rest, so no unit is lost. */
export function split(total: bigint, platformPercent: bigint): { platform: bigint; trader: bigint } {
  const platform = mulDivDown(total, platformPercent, 100n);
  return { platform, trader: total - platform };
}
/** Decimal string (up to 6 places) to parts per million. */
export function ppm(value: number): bigint {
  return BigInt(Math.round(value * 1e6));
}
/**
 * Payout in token minor units, rounded down: profit (USD cents) x scale ratio x discipline
 * coefficient x peg (tokens per USD).
 */
export function payoutUnits(profitCents: number, scalePpm: bigint, disciplinePpm: bigint, pegPpm: bigint): bigint {
  if (profitCents <= 0) return 0n;
  // cents/100 USD * scale * discipline * peg tokens * 10^6 units
  return (BigInt(profitCents) * scalePpm * disciplinePpm * pegPpm * UNIT) / (100n * 1_000_000n ** 3n);
}
/** USD micro-units (stablecoin) x peg to token minor units, rounded down. */
export const usdMicroToUnits = (usdMicro: bigint, pegPpm: bigint) => (usdMicro * pegPpm * UNIT) / (1_000_000n * 1_000_000n);

// ---- ISO weeks --------------------------------------------------------------------------------

export const WEEK_RE = /^(\d{4})-W(\d{2})$/;
export const DAY_MS = 86_400_000;
const DAY = DAY_MS;

/** ISO week of an instant (UTC), as 'YYYY-Www'. */
export function isoWeek(ms: number): string {
  const d = new Date(Math.floor(ms / DAY) * DAY);
  const dow = (d.getUTCDay() + 6) % 7; // Monday 0
  const thursday = new Date(d.getTime() + (3 - dow) * DAY);
  const year = thursday.getUTCFullYear();
  const jan4 = Date.UTC(year, 0, 4);
  const week1Monday = jan4 - ((new Date(jan4).getUTCDay() + 6) % 7) * DAY;
  const week = Math.floor((thursday.getTime() - week1Monday) / (7 * DAY)) + 1;
  return `${year}-W${String(week).padStart(2, '0')}`;
}

/** Monday 00:00 UTC of an ISO week; throws 400 on a malformed or impossible week. */
export function weekStart(week: string): number {
  const m = WEEK_RE.exec(week);
  if (!m) throw new AppError('invalid', 'invalid_week', 'a week is an ISO week: YYYY-Www');
  const year = Number(m[1]);
  const w = Number(m[2]);
  const jan4 = Date.UTC(year, 0, 4);
  const monday = jan4 - ((new Date(jan4).getUTCDay() + 6) % 7) * DAY + (w - 1) * 7 * DAY;
  if (w < 1 || isoWeek(monday) !== week) throw new AppError('invalid', 'invalid_week', `${week} does not exist`);
  return monday;
}

/** The payout instant of a week: its Sunday 00:00 UTC. The week's payout covers the 7 days before it. */
export const payoutAt = (week: string) => weekStart(week) + 6 * DAY;

/** The week whose payout covers an instant: the first Sunday 00:00 UTC strictly after it. */
export function payoutWeekOf(ms: number): string {
  const day = Math.floor(ms / DAY) * DAY;
  const dow = new Date(day).getUTCDay(); // Sunday 0
  const nextSunday = day + (dow === 0 ? 7 : 7 - dow) * DAY;
  return isoWeek(nextSunday);
}

/**
 * The week a fill's realized P&L is booked to (docs/payment.md "Late fills"): the week of its own
 * date while that week's payout instant (its Sunday 00:00 UTC) is still ahead when the hub receives
 * it; once that instant has passed the week is closed, and the fill is booked to the week open at
 * reception, paid as an adjustment with that week's payout.
 */
export function bookingWeek(fillTs: number, receivedAt: number): string {
  const own = payoutWeekOf(fillTs);
  return payoutAt(own) > receivedAt ? own : payoutWeekOf(receivedAt);
}

/** The latest week whose payout instant is at or before `ms`. */
export function lastPayableWeek(ms: number): string {
  return payoutWeekOf(ms - 7 * DAY);
}

export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A UTC day `YYYY-MM-DD` as [from, to) in ms, or undefined when malformed or impossible (2026-02-30). */
export function utcDayRange(date: string): { from: number; to: number } | undefined {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) return undefined;
  const from = Date.parse(`${date}T00:00:00.000Z`);
  if (!Number.isFinite(from) || utcDay(from) !== date) return undefined;
  return { from, to: from + DAY_MS };
}
