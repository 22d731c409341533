import { describe, expect, it } from 'vitest';
import { PRINCIPLE_9, parseCharter, principles } from '../../src/reward/charter.js';
import {
  BASE_RU,
  DEFAULT_SPLIT,
  GRADES,
  MAX_RU_PER_MONTH,
  PLAN_CALENDAR_DAYS,
  PLAN_DAYS,
  STAGES,
  coveragePct,
  daysLeft,
  earned,
  gradeFor,
  kstDate,
  kstDayStartMs,
  kstMonth,
  maturityValue,
  parseCenti,
  planPhase,
  progress,
  splitAmount,
  stageFor,
  stageForYear,
  toWire,
} from '../../src/reward/plan.js';
import { zoneId } from '../../src/reward/zone-id.js';

const HOUR = 3600_000;
const DAY = 24 * HOUR;

describe('grades', () => {
  it('holds the document table', () => {
    expect(GRADES.map((g) => [g.grade, g.name, g.threshold, g.pct])).toEqual([
      [1, '입문', 0, 60],
      [2, '견습', 27, 80],
      [3, '정규', 81, 100],
      [4, '숙련', 216, 125],
      [5, '전문', 540, 150],
      [6, '장인', 1080, 185],
      [7, '명장', 2160, 225],
      [8, '거장', 3240, 260],
      [9, '종장', 4050, 300],
    ]);
  });

  it('gives the highest grade whose threshold is at or below the score, at every edge', () => {
    for (const g of GRADES) {
      expect(gradeFor(g.threshold).grade).toBe(g.grade);
      if (g.threshold > 0) expect(gradeFor(g.threshold - 1).grade).toBe(g.grade - 1);
    }
    expect(gradeFor(0).name).toBe('입문');
    expect(gradeFor(1_000_000).grade).toBe(9);
  });
});

describe('stages', () => {
  it('follows the calendar year table', () => {
    const table: [number, string, number][] = [
      [2025, 'S0', 100],
      [2026, 'S0', 100],
      [2027, 'S0', 100],
      [2028, 'S1', 135],
      [2029, 'S1', 135],
      [2030, 'S2', 182],
      [2031, 'S2', 182],
      [2032, 'S3', 245],
      [2033, 'S3', 245],
      [2034, 'S4', 330],
      [2035, 'S4', 330],
      [2036, 'S5', 445],
      [2037, 'S5', 445],
      [2038, 'S6', 600],
      [2045, 'S6', 600],
    ];
    for (const [y, s, pct] of table) expect([y, stageForYear(y).stage, stageForYear(y).pct]).toEqual([y, s, pct]);
    expect(STAGES.map((s) => s.circulation)).toEqual([729, 243, 81, 27, 9, 3, 1]);
  });

  it('changes at midnight of 1 January in Korea (15:00 UTC on 31 December)', () => {
    for (const [y, from, to] of [
      [2028, 'S0', 'S1'],
      [2030, 'S1', 'S2'],
      [2032, 'S2', 'S3'],
      [2034, 'S3', 'S4'],
      [2036, 'S4', 'S5'],
      [2038, 'S5', 'S6'],
    ] as const) {
      const newYearKst = Date.UTC(y - 1, 11, 31, 15, 0, 0);
      expect(stageFor(newYearKst - 1).stage).toBe(from);
      expect(stageFor(newYearKst).stage).toBe(to);
      // still the old year in UTC, already the new one in Korea
      expect(new Date(newYearKst).getUTCFullYear()).toBe(y - 1);
    }
  });
});

describe('plan period', () => {
  it('keeps the document figure of 4555 days', () => {
    expect(PLAN_DAYS).toBe(4555);
  });

  it('knows the calendar count of the two dates differs from the document', () => {
    // 2026-04-05 .. 2038-09-30: 4561 days apart, 4562 days counting both ends.
    const apart = (Date.UTC(2038, 8, 30) - Date.UTC(2026, 3, 5)) / DAY;
    expect(apart).toBe(4561);
    expect(PLAN_CALENDAR_DAYS).toBe(apart + 1);
    expect(PLAN_CALENDAR_DAYS).not.toBe(PLAN_DAYS);
  });

  it('runs from 2026-04-05 to 2038-09-30 in Korea', () => {
    const start = kstDayStartMs('2026-04-05');
    expect(start).toBe(Date.UTC(2026, 3, 4, 15));
    expect(planPhase(start - 1)).toBe('before');
    expect(planPhase(start)).toBe('running');
    const afterEnd = kstDayStartMs('2038-10-01');
    expect(planPhase(afterEnd - 1)).toBe('running');
    expect(planPhase(afterEnd)).toBe('ended');
  });

  it('counts days left and progress over the 4555 days', () => {
    const start = kstDayStartMs('2026-04-05');
    expect(progress(start - DAY)).toBe(0);
    expect(progress(start)).toBe(0);
    expect(progress(start + DAY)).toBe(Math.floor(10000 / 4555) / 100);
    expect(progress(start + 911 * DAY)).toBe(20);
    expect(progress(start + 4555 * DAY)).toBe(100);
    expect(progress(start + 5000 * DAY)).toBe(100);
    expect(daysLeft(start)).toBe(4561);
    expect(daysLeft(kstDayStartMs('2038-09-30') + 23 * HOUR)).toBe(0);
    expect(daysLeft(kstDayStartMs('2039-01-01'))).toBe(0);
    expect(daysLeft(kstDayStartMs('2038-09-29'))).toBe(1);
  });

  it('dates in Korea', () => {
    const t = Date.UTC(2026, 3, 30, 15, 0, 0); // 2026-05-01 00:00 KST
    expect(kstDate(t)).toBe('2026-05-01');
    expect(kstMonth(t)).toBe('2026-05');
    expect(kstDate(t - 1)).toBe('2026-04-30');
  });
});

describe('earned RU', () => {
  it('is 800 x grade% x v% x coin% for 27 units, for every grade, stage and v edge', () => {
    for (const g of GRADES) {
      for (const s of STAGES) {
        for (const v of [100, 137, 200]) {
          const exact = (BASE_RU * g.pct * v * s.pct) / 1e6; // RU
          expect(toWire(earned(27, g.pct, v, s.pct))).toBe(Math.floor(Math.round(exact * 1e6) / 1e4) / 100);
        }
      }
    }
    expect(toWire(earned(27, 100, 100, 100))).toBe(800);
    expect(toWire(earned(27, 60, 100, 100))).toBe(480);
  });

  it('reaches the 28800 maximum and never more', () => {
    expect(toWire(earned(27, 300, 200, 600))).toBe(MAX_RU_PER_MONTH);
    expect(MAX_RU_PER_MONTH).toBe(800 * 3 * 2 * 6);
    let max = 0;
    for (const g of GRADES) for (const s of STAGES) max = Math.max(max, earned(27, g.pct, 200, s.pct));
    expect(toWire(max)).toBe(28800);
  });

  it('scales linearly with kc, rounded down to the hundredth', () => {
    // 800 x 0.6 x 1 x 1 x 1 / 27 = 17.777... -> 17.77
    expect(toWire(earned(1, 60, 100, 100))).toBe(17.77);
    // 800 x 1 x 1.2 x 1 x 3 / 27 = 106.666... -> 106.66
    expect(toWire(earned(3, 100, 120, 100))).toBe(106.66);
    // exact when divisible: 800 x 1 x 1 x 1 x 9 / 27 = 266.666.. -> 266.66; 800 x 27/27 = 800
    expect(toWire(earned(9, 100, 100, 100))).toBe(266.66);
    for (let kc = 1; kc <= 27; kc++) {
      const c = earned(kc, 185, 163, 245);
      const exactCenti = (80000 * 185 * 163 * 245 * kc) / (27 * 1e6);
      expect(c).toBeLessThanOrEqual(exactCenti);
      expect(exactCenti - c).toBeLessThan(1);
      expect(Number.isInteger(c)).toBe(true);
    }
  });
});

describe('maturity value', () => {
  it('is 6x in S0, about 2.4x in S3 and 1x in 2038', () => {
    expect(toWire(maturityValue(100_00, stageForYear(2026).pct))).toBe(600);
    expect(toWire(maturityValue(100_00, stageForYear(2033).pct))).toBe(244.89);
    expect(toWire(maturityValue(100_00, stageForYear(2038).pct))).toBe(100);
    expect(toWire(maturityValue(17_77, 100))).toBe(106.62);
  });
});

describe('amounts and splits', () => {
  it('accepts at most 2 decimals', () => {
    expect(parseCenti(17.77)).toBe(1777);
    expect(parseCenti('17.7')).toBe(1770);
    expect(parseCenti(0.1 + 0.2)).toBeUndefined();
    expect(parseCenti(1.234)).toBeUndefined();
    expect(parseCenti('1.234')).toBeUndefined();
    expect(parseCenti(-1)).toBeUndefined();
    expect(parseCenti(Number.NaN)).toBeUndefined();
    expect(parseCenti('1e3')).toBeUndefined();
  });

  it('splits every hundredth, the remainder to infrastructure', () => {
    for (const amount of [0, 1, 2, 3, 7, 99, 100, 1777, 8888, 80000, 2_880_000, 123_457]) {
      const p = splitAmount(amount, DEFAULT_SPLIT);
      expect(p.service + p.module + p.content + p.infrastructure).toBe(amount);
      expect(p.service).toBe(Math.floor((amount * 30) / 100));
      expect(p.infrastructure).toBeGreaterThanOrEqual(Math.floor((amount * 30) / 100));
    }
    expect(splitAmount(1, DEFAULT_SPLIT)).toEqual({ service: 0, module: 0, content: 0, infrastructure: 1 });
  });

  it('reports coverage as null without a shortfall', () => {
    expect(coveragePct(100, 0)).toBeNull();
    expect(coveragePct(1, 3)).toBe(33.33);
  });
});

describe('charter', () => {
  it('keeps principle 9 word for word and invents none of 1-8', () => {
    const p = principles(undefined);
    expect(p).toHaveLength(9);
    expect(p[8]!.text).toBe(
      'Three-fold creation, one-fold payment: each unit of work creates three times the paid value; the member receives 1x, the ecosystem ledger receives 1x, the reserve pool receives 1x.',
    );
    expect(PRINCIPLE_9).toBe(p[8]!.text);
    for (const x of p.slice(0, 8)) expect(x).toMatchObject({ text: null, configured: false });
  });

  it('takes exactly 8 operator texts', () => {
    const eight = Array.from({ length: 8 }, (_, i) => `P${i + 1}`);
    expect(principles(parseCharter(eight)).map((x) => x.text)).toEqual([...eight, PRINCIPLE_9]);
    expect(() => parseCharter(eight.slice(0, 7))).toThrow();
    expect(() => parseCharter([...eight.slice(0, 7), ' '])).toThrow();
  });
});

describe('zone ids', () => {
  it('are stable, URL-safe and distinct for Korean names', () => {
    expect(zoneId('KR', 'ko', 'Seoul Arts')).toBe('KR-ko-seoul-arts');
    expect(zoneId('KR', 'ko', '  seoul   ARTS ')).toBe('KR-ko-seoul-arts');
    const a = zoneId('KR', 'ko', '서울 문화');
    const b = zoneId('KR', 'ko', '부산 문화');
    expect(a).toMatch(/^KR-ko-zone_[0-9a-f]{12}$/);
    expect(a).not.toBe(b);
    expect(zoneId('KR', 'ko', '서울 문화')).toBe(a);
    expect(zoneId('KR', 'ko', 'seoul-arts')).not.toBe('KR-ko-seoul-arts');
    expect(zoneId('FR', 'fr', 'Café Seoul')).toMatch(/^FR-fr-caf-seoul_[0-9a-f]{12}$/);
    for (const id of [a, b]) expect(encodeURIComponent(id)).toBe(id);
  });
});
