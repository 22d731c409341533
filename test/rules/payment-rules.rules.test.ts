import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import {
  bookingWeek,
  challengeKind,
  CHALLENGES,
  collateralFor,
  DAY_MS,
  DEFAULT_RULES,
  evaluateRules,
  isoWeek,
  lastPayableWeek,
  learningCredit,
  mulDivDown,
  mulDivUp,
  offrampFee,
  payoutAt,
  payoutUnits,
  payoutWeekOf,
  ppm,
  split,
  usdMicroToUnits,
  utcDay,
  utcDayRange,
  weekStart,
  WEEK_RE,
  type ChallengeStats,
} from '../../src/payment/rules.js';

// The payment relay's numbers (docs/payment.md, spec doc 2 "Limits"): the five challenge kinds,
// the challenge engine's rules (profit target 8 %, daily loss 5 %, max drawdown 10 % of the account
// size, each reached "at or above"), learning credit 0.3 x fee rounded down, collateral 3 % rounded
// up, off-ramp fee 1.4 % rounded up, the 80/20 and 90/10 splits, the payout formula, ISO weeks.

const U = 1_000_000n; // token minor units per token (6 decimals)
const at = (iso: string) => Date.parse(iso);

const stats = (s: Partial<ChallengeStats>): ChallengeStats => ({ realized_cents: 0, peak_cents: 0, day: '2026-11-20', day_cents: 0, ...s });

describe('challenge kinds', () => {
  it('are the five documented kinds with their account sizes and entry fees', () => {
    expect(CHALLENGES).toEqual([
      { challenge_id: 'starter_10k', name: 'Starter 10K', account_size: 10_000, entry_fee: '100000000' },
      { challenge_id: 'standard_25k', name: 'Standard 25K', account_size: 25_000, entry_fee: '200000000' },
      { challenge_id: 'advanced_50k', name: 'Advanced 50K', account_size: 50_000, entry_fee: '300000000' },
      { challenge_id: 'pro_100k', name: 'Pro 100K', account_size: 100_000, entry_fee: '500000000' },
      { challenge_id: 'elite_200k', name: 'Elite 200K', account_size: 200_000, entry_fee: '900000000' },
    ]);
  });

  it('are found by id, and an unknown id finds none', () => {
    expect(challengeKind('pro_100k')?.account_size).toBe(100_000);
    expect(challengeKind('starter_10k')?.name).toBe('Starter 10K');
    expect(challengeKind('pro_100')).toBeUndefined();
    expect(challengeKind('')).toBeUndefined();
  });
});

describe('challenge rules', () => {
  it('default to profit target 8 %, daily loss 5 %, max drawdown 10 %', () => {
    expect(DEFAULT_RULES).toEqual({ profitTarget: 0.08, dailyLoss: 0.05, maxDrawdown: 0.1 });
  });

  // starter_10k: 1,000,000 cents; 5 % = 50,000, 10 % = 100,000, 8 % = 80,000
  it('fail on a day loss at 5 % of the account size, not one cent before', () => {
    expect(evaluateRules(stats({ realized_cents: -50_000, day_cents: -50_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    expect(evaluateRules(stats({ realized_cents: -50_001, day_cents: -50_001 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    expect(evaluateRules(stats({ realized_cents: -49_999, day_cents: -49_999 }), 10_000, DEFAULT_RULES)).toBeUndefined();
  });

  it('count only the day: a day gain of 5 % is no loss, and earlier losses are not the day', () => {
    expect(evaluateRules(stats({ realized_cents: 50_000, peak_cents: 50_000, day_cents: 50_000 }), 10_000, DEFAULT_RULES)).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: -60_000, day_cents: -10_000 }), 10_000, DEFAULT_RULES)).toBeUndefined();
  });

  it('fail on a drawdown from the peak at 10 % of the account size, not one cent before', () => {
    expect(evaluateRules(stats({ peak_cents: 70_000, realized_cents: -30_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    expect(evaluateRules(stats({ peak_cents: 70_000, realized_cents: -30_001 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    expect(evaluateRules(stats({ peak_cents: 70_000, realized_cents: -29_999 }), 10_000, DEFAULT_RULES)).toBeUndefined();
    // from the peak, not from zero: 10 % below zero without a peak is the drawdown too
    expect(evaluateRules(stats({ peak_cents: 0, realized_cents: -99_999 }), 10_000, DEFAULT_RULES)).toBeUndefined();
    expect(evaluateRules(stats({ peak_cents: 0, realized_cents: -100_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
  });

  it('pass at the profit target of 8 %, not one cent before', () => {
    expect(evaluateRules(stats({ realized_cents: 80_000, peak_cents: 80_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 80_001, peak_cents: 80_001 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 79_999, peak_cents: 79_999 }), 10_000, DEFAULT_RULES)).toBeUndefined();
    expect(evaluateRules(stats({}), 10_000, DEFAULT_RULES)).toBeUndefined();
  });

  it('scale with the account size (elite_200k: 100,000 / 200,000 / 160,000 USD cents x 10)', () => {
    expect(evaluateRules(stats({ realized_cents: -1_000_000, day_cents: -1_000_000 }), 200_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    expect(evaluateRules(stats({ realized_cents: -999_999, day_cents: -999_999 }), 200_000, DEFAULT_RULES)).toBeUndefined();
    expect(evaluateRules(stats({ peak_cents: 1_500_000, realized_cents: -500_000 }), 200_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    expect(evaluateRules(stats({ peak_cents: 1_500_000, realized_cents: -499_999 }), 200_000, DEFAULT_RULES)).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: 1_600_000, peak_cents: 1_600_000 }), 200_000, DEFAULT_RULES)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 1_599_999, peak_cents: 1_599_999 }), 200_000, DEFAULT_RULES)).toBeUndefined();
  });

  it('take the configured fractions, each from its own setting', () => {
    const rules = { profitTarget: 0.12, dailyLoss: 0.02, maxDrawdown: 0.04 };
    expect(evaluateRules(stats({ realized_cents: -20_000, day_cents: -20_000 }), 10_000, rules)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    expect(evaluateRules(stats({ realized_cents: -19_999, day_cents: -19_999 }), 10_000, rules)).toBeUndefined();
    expect(evaluateRules(stats({ peak_cents: 100_000, realized_cents: 60_000 }), 10_000, rules)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    expect(evaluateRules(stats({ peak_cents: 100_000, realized_cents: 60_001 }), 10_000, rules)).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: 120_000, peak_cents: 120_000 }), 10_000, rules)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 119_999, peak_cents: 119_999 }), 10_000, rules)).toBeUndefined();
  });

  it('reach a configured fraction exactly at its whole-cent amount (7 % and 14 % of 25,000 USD)', () => {
    // 0.07 x 2,500,000 is 175,000.00000000003 in floating point: the exact 7 % must still count
    const rules = { profitTarget: 0.07, dailyLoss: 0.07, maxDrawdown: 0.14 };
    expect(evaluateRules(stats({ realized_cents: 175_000, peak_cents: 175_000 }), 25_000, rules)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 174_999, peak_cents: 174_999 }), 25_000, rules)).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: -175_000, day_cents: -175_000 }), 25_000, rules)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    expect(evaluateRules(stats({ realized_cents: -174_999, day_cents: -174_999 }), 25_000, rules)).toBeUndefined();
    expect(evaluateRules(stats({ peak_cents: 150_000, realized_cents: -200_000 }), 25_000, rules)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    expect(evaluateRules(stats({ peak_cents: 150_000, realized_cents: -199_999 }), 25_000, rules)).toBeUndefined();
  });

  it('round a fraction of a cent up: 1.5 % of 1 USD is reached at 2 cents', () => {
    const rules = { profitTarget: 0.015, dailyLoss: 0.015, maxDrawdown: 0.015 };
    expect(evaluateRules(stats({ realized_cents: 2, peak_cents: 2 }), 1, rules)).toEqual({ outcome: 'pass' });
    expect(evaluateRules(stats({ realized_cents: 1, peak_cents: 1 }), 1, rules)).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: -1, day_cents: -1 }), 1, { ...rules, maxDrawdown: 1 })).toBeUndefined();
    expect(evaluateRules(stats({ realized_cents: -2, day_cents: -2 }), 1, { ...rules, maxDrawdown: 1 })).toEqual({ outcome: 'fail', rule: 'daily_loss' });
  });

  it('judge a loss rule before the profit target, the daily loss before the drawdown', () => {
    // both loss rules breached
    expect(evaluateRules(stats({ peak_cents: 50_000, realized_cents: -50_000, day_cents: -100_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
    // above the target but down 10 % from the peak
    expect(evaluateRules(stats({ peak_cents: 200_000, realized_cents: 100_000, day_cents: -40_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'max_drawdown' });
    // above the target after a day loss of 5 %
    expect(evaluateRules(stats({ peak_cents: 150_000, realized_cents: 100_000, day_cents: -50_000 }), 10_000, DEFAULT_RULES)).toEqual({ outcome: 'fail', rule: 'daily_loss' });
  });
});

describe('rounding per flow', () => {
  it('mulDivDown floors and mulDivUp ceils, exact products unchanged', () => {
    expect(mulDivDown(7n, 1n, 2n)).toBe(3n);
    expect(mulDivDown(6n, 1n, 2n)).toBe(3n);
    expect(mulDivDown(10n, 3n, 4n)).toBe(7n);
    expect(mulDivUp(7n, 1n, 2n)).toBe(4n);
    expect(mulDivUp(6n, 1n, 2n)).toBe(3n);
    expect(mulDivUp(10n, 3n, 4n)).toBe(8n);
    expect(mulDivUp(0n, 3n, 4n)).toBe(0n);
  });

  it('learning credit is 0.3 x the entry fee, rounded down', () => {
    expect(learningCredit(100n * U)).toBe(30n * U);
    expect(learningCredit(900n * U)).toBe(270n * U);
    expect(learningCredit(13n)).toBe(3n); // 3.9
    expect(learningCredit(10n)).toBe(3n);
    expect(learningCredit(9n)).toBe(2n); // 2.7
  });

  it('collateral is 3 % of the account size in tokens at the peg, rounded up', () => {
    expect(collateralFor(10_000, 1_000_000n)).toBe(300n * U); // peg 1 token per USD
    expect(collateralFor(200_000, 2_500_000n)).toBe(15_000n * U);
    expect(collateralFor(25_000, 1_234_567n)).toBe(925_925_250n); // 750 USD x 1.234567
    expect(collateralFor(1, 1n)).toBe(1n); // 0.03 units
    expect(collateralFor(1, 33n)).toBe(1n); // 0.99
    expect(collateralFor(1, 34n)).toBe(2n); // 1.02
  });

  it('the off-ramp fee is 1.4 %, rounded up', () => {
    expect(offrampFee(1000n)).toBe(14n);
    expect(offrampFee(1001n)).toBe(15n); // 14.014
    expect(offrampFee(999n)).toBe(14n); // 13.986
    expect(offrampFee(500n)).toBe(7n);
    expect(offrampFee(0n)).toBe(0n);
    expect(offrampFee(1_000_000n * U)).toBe(14_000n * U);
  });

  it('a split rounds the platform share down and gives the trader the rest (80/20, 90/10)', () => {
    expect(split(1000n, 20n)).toEqual({ platform: 200n, trader: 800n });
    expect(split(99n, 20n)).toEqual({ platform: 19n, trader: 80n }); // 19.8
    expect(split(101n, 10n)).toEqual({ platform: 10n, trader: 91n }); // 10.1
    expect(split(4n, 20n)).toEqual({ platform: 0n, trader: 4n });
    expect(split(0n, 10n)).toEqual({ platform: 0n, trader: 0n });
  });

  it('ppm rounds a fraction to the nearest millionth', () => {
    expect(ppm(1)).toBe(1_000_000n);
    expect(ppm(1.5)).toBe(1_500_000n);
    expect(ppm(0.1234567)).toBe(123_457n);
    expect(ppm(0.1234564)).toBe(123_456n);
    expect(ppm(0)).toBe(0n);
  });
});

describe('payout formula', () => {
  it('is profit (USD cents / 100) x scale x discipline x peg tokens, in minor units', () => {
    // 123.45 USD x 1.5 x 0.9 x 2.5 = 416.64375 tokens
    expect(payoutUnits(12_345, 1_500_000n, 900_000n, 2_500_000n)).toBe(416_643_750n);
    // 1 USD at everything 1 = 1 token
    expect(payoutUnits(100, 1_000_000n, 1_000_000n, 1_000_000n)).toBe(U);
    // each factor counts on its own
    expect(payoutUnits(100, 2_000_000n, 1_000_000n, 1_000_000n)).toBe(2n * U);
    expect(payoutUnits(100, 1_000_000n, 3_000_000n, 1_000_000n)).toBe(3n * U);
    expect(payoutUnits(100, 1_000_000n, 1_000_000n, 5_000_000n)).toBe(5n * U);
    expect(payoutUnits(1, 1_000_000n, 1_000_000n, 1_000_000n)).toBe(10_000n);
  });

  it('rounds down', () => {
    // 0.01 USD x 1.000001 = 10,000.01 units
    expect(payoutUnits(1, 1_000_000n, 1_000_000n, 1_000_001n)).toBe(10_000n);
    // 0.01 USD x 0.000001 x 0.5 x 1.999999 units
    expect(payoutUnits(1, 1n, 500_000n, 1_999_999n)).toBe(0n);
    expect(payoutUnits(1, 999_999n, 1_000_000n, 1_000_000n)).toBe(9_999n); // 9,999.99
  });

  it('pays nothing for no profit or a loss', () => {
    expect(payoutUnits(0, 1_000_000n, 1_000_000n, 1_000_000n)).toBe(0n);
    expect(payoutUnits(-1, 1_000_000n, 1_000_000n, 1_000_000n)).toBe(0n);
    expect(payoutUnits(-100_000, 1_500_000n, 900_000n, 2_500_000n)).toBe(0n);
  });

  it('converts stablecoin micro-USD at the peg, rounded down', () => {
    expect(usdMicroToUnits(1_000_000n, 2_500_000n)).toBe(2_500_000n);
    expect(usdMicroToUnits(3_000_000n, 1_000_000n)).toBe(3n * U);
    expect(usdMicroToUnits(1n, 1_500_000n)).toBe(1n); // 1.5
    expect(usdMicroToUnits(1n, 999_999n)).toBe(0n); // 0.999999
  });
});

describe('ISO weeks', () => {
  it('name the ISO week of an instant, across year ends and the whole day', () => {
    expect(isoWeek(at('2026-11-16T00:00:00Z'))).toBe('2026-W47'); // Monday
    expect(isoWeek(at('2026-11-22T23:59:59.999Z'))).toBe('2026-W47'); // Sunday
    expect(isoWeek(at('2026-11-23T00:00:00Z'))).toBe('2026-W48');
    expect(isoWeek(at('2026-11-19T12:00:00Z'))).toBe('2026-W47');
    expect(isoWeek(at('2024-12-30T00:00:00Z'))).toBe('2025-W01'); // a Monday in the next ISO year
    expect(isoWeek(at('2021-01-03T23:00:00Z'))).toBe('2020-W53'); // a Sunday in the last ISO year
    expect(isoWeek(at('2026-12-31T00:00:00Z'))).toBe('2026-W53');
    expect(isoWeek(at('2026-02-03T00:00:00Z'))).toBe('2026-W06');
    expect(isoWeek(at('2026-03-12T00:00:00Z'))).toBe('2026-W11');
  });

  it('start on Monday 00:00 UTC', () => {
    expect(new Date(weekStart('2026-W47')).toISOString()).toBe('2026-11-16T00:00:00.000Z');
    expect(new Date(weekStart('2026-W01')).toISOString()).toBe('2025-12-29T00:00:00.000Z');
    expect(new Date(weekStart('2025-W01')).toISOString()).toBe('2024-12-30T00:00:00.000Z');
    expect(new Date(weekStart('2026-W53')).toISOString()).toBe('2026-12-28T00:00:00.000Z');
    expect(new Date(weekStart('2020-W53')).toISOString()).toBe('2020-12-28T00:00:00.000Z');
  });

  const refused = (week: string, message: string | RegExp) => {
    let err: unknown;
    try {
      weekStart(week);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ kind: 'invalid', code: 'invalid_week', status: 400 });
    expect((err as Error).message).toMatch(message);
  };

  it('refuse a malformed week (400 invalid_week)', () => {
    expect(WEEK_RE.test('2026-W47')).toBe(true);
    for (const w of ['2026-47', '26-W47', '2026-W7', '2026-W047', 'x2026-W47', '2026-W47x', '2026-w47', 'abcd-W47', '2026-Wab', '']) {
      refused(w, 'a week is an ISO week: YYYY-Www');
    }
  });

  it('refuse a week that does not exist', () => {
    refused('2026-W00', '2026-W00 does not exist');
    refused('2025-W53', '2025-W53 does not exist');
    refused('2026-W54', '2026-W54 does not exist');
    refused('2026-W99', '2026-W99 does not exist');
  });

  it('pay on their Sunday 00:00 UTC', () => {
    expect(new Date(payoutAt('2026-W47')).toISOString()).toBe('2026-11-22T00:00:00.000Z');
    expect(new Date(payoutAt('2026-W01')).toISOString()).toBe('2026-01-04T00:00:00.000Z');
    expect(DAY_MS).toBe(86_400_000);
  });

  it('an instant is paid by the first Sunday 00:00 UTC strictly after it', () => {
    const days = ['16', '17', '18', '19', '20', '21'];
    for (const d of days) {
      expect(payoutWeekOf(at(`2026-11-${d}T00:00:00Z`))).toBe('2026-W47');
      expect(payoutWeekOf(at(`2026-11-${d}T23:59:59.999Z`))).toBe('2026-W47');
    }
    expect(payoutWeekOf(at('2026-11-14T23:59:59.999Z'))).toBe('2026-W46'); // Saturday before
    expect(payoutWeekOf(at('2026-11-15T00:00:00Z'))).toBe('2026-W47'); // W46's payout instant
    expect(payoutWeekOf(at('2026-11-15T23:59:59.999Z'))).toBe('2026-W47');
    expect(payoutWeekOf(at('2026-11-22T00:00:00Z'))).toBe('2026-W48'); // the payout instant itself
    expect(payoutWeekOf(at('2026-11-22T13:00:00Z'))).toBe('2026-W48');
    expect(payoutWeekOf(at('2026-11-23T00:00:00Z'))).toBe('2026-W48');
  });

  it('the last payable week is the one whose Sunday 00:00 UTC is at or before the instant', () => {
    expect(lastPayableWeek(at('2026-11-22T00:00:00Z'))).toBe('2026-W47');
    expect(lastPayableWeek(at('2026-11-21T23:59:59.999Z'))).toBe('2026-W46');
    expect(lastPayableWeek(at('2026-11-28T23:59:59.999Z'))).toBe('2026-W47');
    expect(lastPayableWeek(at('2026-11-29T00:00:00Z'))).toBe('2026-W48');
  });

  it('a fill is booked to its own week until that week closes, then to the week open at reception', () => {
    const fill = at('2026-11-21T15:00:00Z'); // Saturday of W47
    const close = payoutAt('2026-W47');
    expect(bookingWeek(fill, fill)).toBe('2026-W47');
    expect(bookingWeek(fill, close - 1)).toBe('2026-W47');
    expect(bookingWeek(fill, close)).toBe('2026-W48');
    expect(bookingWeek(fill, at('2026-12-03T00:00:00Z'))).toBe('2026-W49');
    // a fill dated ahead of the hub's clock (W48) keeps its own week, still open
    expect(bookingWeek(at('2026-11-24T10:00:00Z'), fill)).toBe('2026-W48');
  });
});

describe('UTC days', () => {
  it('name the UTC date of an instant', () => {
    expect(utcDay(at('2026-11-21T23:59:59.999Z'))).toBe('2026-11-21');
    expect(utcDay(at('2026-11-22T00:00:00Z'))).toBe('2026-11-22');
  });

  it('give a day as [from, to) in ms', () => {
    expect(utcDayRange('2026-11-21')).toEqual({ from: at('2026-11-21T00:00:00Z'), to: at('2026-11-22T00:00:00Z') });
    expect(utcDayRange('2024-02-29')).toEqual({ from: at('2024-02-29T00:00:00Z'), to: at('2024-03-01T00:00:00Z') });
  });

  it('refuse a malformed or impossible day', () => {
    for (const d of ['2026-02-30', '2026-02-29', '2026-13-01', '2026-00-10', '2026-1-01', '2026-01-1', '26-01-01', 'x2026-01-01', '2026-01-01x', '2026-01-01T00:00', 'abcd-ef-gh', '']) {
      expect(utcDayRange(d)).toBeUndefined();
    }
  });

  it('refuse an expanded year with a month, which the date parser takes and gives back alike', () => {
    // Date.parse('+020260-01T00:00:00.000Z') is valid and its ISO text starts '+020260-01'
    expect(utcDayRange('+020260-01')).toBeUndefined();
    expect(utcDayRange('-000001-01')).toBeUndefined();
  });
});
