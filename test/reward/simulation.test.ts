import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { coverageSimulation } from '../../src/reward/simulation.js';

describe('coverage simulation', () => {
  it('gives the document figures: reserve 20%, reserve + ecosystem 34%', () => {
    const sim = coverageSimulation();
    expect(sim.assumptions).toMatchObject({
      members: 100,
      months: 12,
      grade: 3,
      grade_pct: 100,
      v: 100,
      units_per_month: 27,
      stage: 'S0',
      coin_pct: 100,
      exchange_pct: 100,
      split: { service: 30, module: 20, content: 20, infrastructure: 30 },
    });
    expect(sim.assumptions.text).toContain('100 members at grade 3');
    expect(sim.series).toHaveLength(12);
    expect(sim.final.reserve_coverage_pct).toBe(20);
    expect(sim.final.combined_coverage_pct).toBe(34);
    expect(sim.final.remainder_pct).toBe(66);
  });

  it('builds the figures month by month', () => {
    const sim = coverageSimulation();
    sim.series.forEach((m, i) => {
      const k = i + 1;
      expect(m.month).toBe(k);
      expect(m.earned_ru).toBe(80_000); // 100 members x 800 RU
      expect(m.reserve).toBe(80_000 * k);
      expect(m.ecosystem.total).toBe(80_000 * k);
      expect(m.ecosystem.infrastructure).toBe(24_000 * k);
      expect(m.ecosystem_realizable).toBe(56_000 * k);
      expect(m.cu_exchanged).toBe(80_000 * k);
      expect(m.maturity_obligation).toBe(480_000 * k); // 6x in S0
      expect(m.maturity_shortfall).toBe(400_000 * k);
      expect(m.reserve_coverage_pct).toBe(20);
      expect(m.combined_coverage_pct).toBe(34);
    });
  });

  it('computes, rather than states, the rates: other assumptions give other figures', () => {
    // Exchanged in S3 (coin 245%): the maturity multiple is 600/245, so the shortfall is smaller.
    const s3 = coverageSimulation({ stage: 'S3' });
    expect(s3.final.reserve_coverage_pct).toBeGreaterThan(60);
    // Half the RU exchanged: half the shortfall, twice the coverage.
    const half = coverageSimulation({ exchange_pct: 50 });
    expect(half.final.reserve_coverage_pct).toBe(40);
    expect(half.final.combined_coverage_pct).toBe(68);
    // A different split changes the realizable part only.
    const split = coverageSimulation({ split: { service: 25, module: 25, content: 25, infrastructure: 25 } });
    expect(split.final.reserve_coverage_pct).toBe(20);
    expect(split.final.combined_coverage_pct).toBe(35);
    // Nothing exchanged: nothing to cover.
    const none = coverageSimulation({ exchange_pct: 0 });
    expect(none.final.reserve_coverage_pct).toBeNull();
    expect(none.final.remainder_pct).toBeNull();
  });

  it('keeps the rates when members are promoted as they work', () => {
    const sim = coverageSimulation({ promote: true, members: 10 });
    expect(sim.series[0]!.grade).toBe(3);
    expect(sim.series[11]!.grade).toBe(4); // score 81 + 27 x 5 = 216 reached after month 5
    expect(sim.series[11]!.earned_ru).toBe(10_000); // 10 members x 1000 RU at 125%
    expect(sim.final.reserve_coverage_pct).toBe(20);
    expect(sim.final.combined_coverage_pct).toBe(34);
  });

  it('refuses bad parameters with a 400', () => {
    expect(() => coverageSimulation({ members: 0 })).toThrow(AppError);
    expect(() => coverageSimulation({ split: { service: 50, module: 50, content: 50, infrastructure: 0 } })).toThrow(
      /summing to 100/,
    );
    expect(() => coverageSimulation({ bogus: 1 } as never)).toThrow(AppError);
  });
});
