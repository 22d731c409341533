import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BASE_RU,
  DEFAULT_SPLIT,
  ECOSYSTEM_CATEGORIES,
  KST_OFFSET_MS,
  MATURITY_PCT,
  MAX_RU_PER_MONTH,
  PLAN_DAYS,
  PLAN_END,
  PLAN_END_YEAR,
  PLAN_START,
  UNIT_SECONDS,
  UNITS_PER_DAY,
  UNITS_PER_WORK_MONTH,
  V_MAX,
  V_MIN,
  WORK_MONTH_DAYS,
  ZONE_CAPACITY,
  checkSplit,
  coveragePct,
  dateEpochDay,
  daysElapsed,
  daysLeft,
  earned,
  excessOf,
  gradeByNumber,
  gradeFor,
  hasAtMost2Decimals,
  kstDate,
  kstDayStartMs,
  kstEpochDay,
  kstMonth,
  kstYear,
  maturityValue,
  parseCenti,
  planPhase,
  progress,
  scoreOf,
  splitAmount,
  stageByCode,
  stageFor,
  toWire,
  type Split,
} from '../../src/reward/plan.js';

// Document 3, "Reward plan": every figure checked on both sides of its boundary.

describe('key figures', () => {
  it('are the document numbers', () => {
    expect(UNIT_SECONDS).toBe(3200);
    expect(UNITS_PER_DAY).toBe(3);
    expect(WORK_MONTH_DAYS).toBe(9);
    expect(UNITS_PER_WORK_MONTH).toBe(27);
    expect(BASE_RU).toBe(800);
    expect(MAX_RU_PER_MONTH).toBe(28800);
    expect(ZONE_CAPACITY).toBe(6561);
    expect([V_MIN, V_MAX]).toEqual([100, 200]);
    expect([PLAN_START, PLAN_END, PLAN_END_YEAR, PLAN_DAYS]).toEqual(['2026-04-05', '2038-09-30', 2038, 4555]);
    expect(MATURITY_PCT).toBe(600);
    expect(KST_OFFSET_MS).toBe(9 * 3600 * 1000);
  });
});

describe('ecosystem split', () => {
  const split = (service: number, module: number, content: number, infrastructure: number): Split => ({ service, module, content, infrastructure });

  it('four non-negative integer percentages summing to 100: 99 and 101 refused', () => {
    expect(ECOSYSTEM_CATEGORIES).toEqual(['service', 'module', 'content', 'infrastructure']);
    expect(DEFAULT_SPLIT).toEqual(split(30, 20, 20, 30));
    expect(checkSplit(DEFAULT_SPLIT)).toEqual(split(30, 20, 20, 30));
    expect(checkSplit(split(100, 0, 0, 0))).toEqual(split(100, 0, 0, 0));
    expect(checkSplit(split(0, 0, 0, 100))).toEqual(split(0, 0, 0, 100));
    expect(() => checkSplit(split(30, 20, 20, 29))).toThrow(RangeError);
    expect(() => checkSplit(split(30, 20, 20, 31))).toThrow('ecosystem split must be four non-negative integer percentages summing to 100');
  });

  it('refuses negative and fractional percentages even when they sum to 100', () => {
    for (const bad of [split(-10, 50, 30, 30), split(30, 20, 20.5, 29.5), split(0, 0, 101, -1), split(0.5, 0.5, 49, 50), split(NaN, 50, 25, 25)]) {
      expect(() => checkSplit(bad), JSON.stringify(bad)).toThrow(RangeError);
    }
    expect(() => checkSplit({ service: 50, module: 50, content: 0 } as Split)).toThrow(RangeError);
  });

  it('returns only the four categories', () => {
    expect(checkSplit({ ...split(25, 25, 25, 25), extra: 1 } as Split)).toEqual(split(25, 25, 25, 25));
  });

  it('splitAmount: floor per category, the remainder to infrastructure, the sum exact', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 12 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (amount, a, b, c) => {
        if (a + b + c > 100) return;
        const s = split(a, b, c, 100 - a - b - c);
        const p = splitAmount(amount, s);
        expect(p.service + p.module + p.content + p.infrastructure).toBe(amount);
        expect(p.service).toBe(Math.floor((amount * a) / 100));
        expect(p.module).toBe(Math.floor((amount * b) / 100));
        expect(p.content).toBe(Math.floor((amount * c) / 100));
        expect(p.infrastructure).toBeGreaterThanOrEqual(0);
      }),
    );
    expect(splitAmount(199, split(10, 20, 30, 40))).toEqual({ service: 19, module: 39, content: 59, infrastructure: 82 });
  });
});

describe('amounts', () => {
  it('parseCenti: up to 13 integer digits and 2 decimals', () => {
    expect(parseCenti('9999999999999')).toBe(999999999999900);
    expect(parseCenti('99999999999999')).toBeUndefined();
    expect(parseCenti('0')).toBe(0);
    expect(parseCenti('0.5')).toBe(50);
    expect(parseCenti('0.05')).toBe(5);
    expect(parseCenti('0.055')).toBeUndefined();
    expect(parseCenti(' 12.30 ')).toBe(1230);
    expect(parseCenti('12.')).toBeUndefined();
    expect(parseCenti('.5')).toBeUndefined();
    expect(parseCenti('')).toBeUndefined();
    expect(parseCenti(Infinity)).toBeUndefined();
    expect(parseCenti(12)).toBe(1200);
    expect(parseCenti('x12')).toBeUndefined();
    expect(parseCenti('12x')).toBeUndefined();
  });

  it('parseCenti round-trips through toWire for every amount with 2 decimals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10 ** 13 }), (c) => {
        expect(parseCenti(toWire(c))).toBe(c);
        expect(parseCenti(String(toWire(c)))).toBe(c);
        expect(hasAtMost2Decimals(toWire(c))).toBe(true);
      }),
    );
  });

  it('hasAtMost2Decimals', () => {
    expect(hasAtMost2Decimals(1)).toBe(true);
    expect(hasAtMost2Decimals(-1.25)).toBe(true);
    expect(hasAtMost2Decimals(1.1)).toBe(true);
    expect(hasAtMost2Decimals(1.125)).toBe(false);
    expect(hasAtMost2Decimals(NaN)).toBe(false);
    expect(hasAtMost2Decimals(Infinity)).toBe(false);
    expect(hasAtMost2Decimals(1e21)).toBe(false);
  });

  it('coverage: 2 decimals, null when nothing is short', () => {
    expect(coveragePct(1, 0)).toBeNull();
    expect(coveragePct(1, -1)).toBeNull();
    expect(coveragePct(0, 1)).toBe(0);
    expect(coveragePct(2, 3)).toBe(66.67);
    expect(coveragePct(5, 4)).toBe(125);
  });
});

describe('grades and stages', () => {
  it('gradeByNumber 1..9, 0 and 10 refused', () => {
    expect(gradeByNumber(1).name).toBe('입문');
    expect(gradeByNumber(9)).toMatchObject({ grade: 9, name: '종장', threshold: 4050, pct: 300 });
    expect(() => gradeByNumber(0)).toThrow('no grade 0');
    expect(() => gradeByNumber(10)).toThrow(RangeError);
  });
  it('score and excess', () => {
    expect(scoreOf(27, 13)).toBe(40);
    expect(excessOf(100)).toBe(0);
    expect(excessOf(150)).toBe(50);
    expect(gradeFor(scoreOf(20, excessOf(107))).grade).toBe(2);
    expect(gradeFor(scoreOf(20, excessOf(106))).grade).toBe(1);
  });
  it('stageByCode, unknown codes refused', () => {
    expect(stageByCode('S3')).toMatchObject({ from: 2032, to: 2033, pct: 245, circulation: 27 });
    expect(() => stageByCode('S7')).toThrow('no stage S7');
  });
  it('stageFor reads the KST year', () => {
    const newYearKst = Date.UTC(2027, 11, 31, 15, 0, 0);
    expect(stageFor(newYearKst - 1).stage).toBe('S0');
    expect(stageFor(newYearKst).stage).toBe('S1');
  });
});

describe('formulas', () => {
  it('earned rounds down to the hundredth, never more than the maximum', () => {
    // 800 x 60% x 100% x 100% x 1/27 = 17.777... -> 17.77
    expect(earned(1, 60, 100, 100)).toBe(1777);
    expect(earned(27, 300, 200, 600)).toBe(MAX_RU_PER_MONTH * 100);
    expect(earned(0, 300, 200, 600)).toBe(0);
    expect(earned(2, 100, 150, 135)).toBe(Math.floor((800 * 100 * 100 * 150 * 135 * 2) / 27_000_000));
  });
  it('maturity value rounds down', () => {
    expect(maturityValue(1, 135)).toBe(4);
    expect(maturityValue(100, 600)).toBe(100);
    expect(maturityValue(100, 100)).toBe(600);
  });
});

describe('KST calendar and the plan period', () => {
  const kstMidnight = (date: string) => kstDayStartMs(date);

  it('KST dates change at 15:00 UTC', () => {
    const t = Date.UTC(2026, 3, 4, 15, 0, 0);
    expect(kstDate(t - 1)).toBe('2026-04-04');
    expect(kstDate(t)).toBe('2026-04-05');
    expect(kstMonth(Date.UTC(2026, 3, 30, 15))).toBe('2026-05');
    expect(kstYear(Date.UTC(2026, 11, 31, 14, 59))).toBe(2026);
    expect(kstYear(Date.UTC(2026, 11, 31, 15))).toBe(2027);
    expect(kstEpochDay(t)).toBe(dateEpochDay('2026-04-05'));
    expect(kstEpochDay(t - 1)).toBe(dateEpochDay('2026-04-04'));
    expect(kstDate(Date.parse('0005-01-01T00:00:00Z'))).toBe('0005-01-01');
    expect(kstDate(Date.UTC(2026, 0, 1, 15))).toBe('2026-01-02');
    expect(kstDayStartMs('2026-04-05')).toBe(t);
    expect(dateEpochDay('1970-01-02')).toBe(1);
  });

  it('the plan runs from the first KST instant of 2026-04-05 to the last of 2038-09-30', () => {
    const start = kstMidnight('2026-04-05');
    const after = kstMidnight('2038-10-01');
    expect(planPhase(start - 1)).toBe('before');
    expect(planPhase(start)).toBe('running');
    expect(planPhase(after - 1)).toBe('running');
    expect(planPhase(after)).toBe('ended');
  });

  it('days left and elapsed never go negative; progress is clamped and rounded down', () => {
    const start = kstMidnight('2026-04-05');
    const end = kstMidnight('2038-09-30');
    expect(daysElapsed(start - 1)).toBe(0);
    expect(daysElapsed(start)).toBe(0);
    expect(daysElapsed(start + 86_400_000)).toBe(1);
    expect(daysLeft(end)).toBe(0);
    expect(daysLeft(end - 1)).toBe(1);
    expect(daysLeft(end + 10 * 86_400_000)).toBe(0);
    expect(progress(start - 86_400_000)).toBe(0);
    expect(progress(start)).toBe(0);
    // one day of 4555: 0.0219... -> 0.02
    expect(progress(start + 86_400_000)).toBe(0.02);
    // 4555 days elapsed: 100; later still 100
    expect(progress(start + 4555 * 86_400_000)).toBe(100);
    expect(progress(start + 4554 * 86_400_000)).toBe(99.97);
    expect(progress(start + 4600 * 86_400_000)).toBe(100);
  });
});
