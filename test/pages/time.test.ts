import { describe, expect, it } from 'vitest';
import { kst, kstDate, kstSpan, kstTime } from '../../web/common/time.js';

/** The pages' one time-zone rule (web/common/time.ts): KST, the zone written, dates with their year. */
describe('web/common/time.ts', () => {
  const at = Date.UTC(2026, 10, 25, 4, 5, 9); // 2026-11-25 04:05:09 UTC = 13:05:09 KST

  it('writes an instant in KST with the year and the zone, from milliseconds, ISO text or a Date', () => {
    expect(kst(at)).toBe('2026-11-25 13:05 KST');
    expect(kst(new Date(at).toISOString())).toBe('2026-11-25 13:05 KST');
    expect(kst(new Date(at))).toBe('2026-11-25 13:05 KST');
    expect(kst('2027-03-01T18:00:00+09:00')).toBe('2027-03-01 18:00 KST');
    expect(kst(at, { seconds: true })).toBe('2026-11-25 13:05:09 KST');
  });

  it('crosses midnight and the year in Seoul, not in UTC; no daylight saving', () => {
    expect(kst(Date.UTC(2026, 11, 31, 15, 0))).toBe('2027-01-01 00:00 KST');
    expect(kstDate(Date.UTC(2026, 11, 31, 14, 59))).toBe('2026-12-31');
    expect(kstDate(Date.UTC(2026, 11, 31, 15, 0))).toBe('2027-01-01');
    expect(kst(Date.UTC(2026, 6, 1, 0, 0))).toBe('2026-07-01 09:00 KST');
    expect(kst(Date.UTC(2026, 0, 1, 0, 0))).toBe('2026-01-01 09:00 KST');
  });

  it('writes times of day and periods with the zone once; text that is no instant stays as it is', () => {
    expect(kstTime(at)).toBe('13:05:09 KST');
    expect(kstTime(at, { seconds: false })).toBe('13:05 KST');
    expect(kstSpan(at, at + 2 * 86_400_000)).toBe('2026-11-25 13:05 – 2026-11-27 13:05 KST');
    expect(kst(Date.UTC(2026, 10, 25, 15, 0))).toBe('2026-11-26 00:00 KST'); // never "24:00"
    expect(kst('soon')).toBe('soon');
  });
});
