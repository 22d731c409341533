import { z } from 'zod';
import { badRequest } from '../errors.js';
import { parseInput } from './inputs.js';
import {
  DEFAULT_SPLIT,
  ECOSYSTEM_CATEGORIES,
  STAGES,
  UNITS_PER_WORK_MONTH,
  V_MAX,
  V_MIN,
  checkSplit,
  coveragePct,
  earned,
  excessOf,
  gradeByNumber,
  gradeFor,
  maturityValue,
  scoreOf,
  splitAmount,
  stageByCode,
  toWire,
  type Split,
} from './plan.js';

/**
 * The 12-month coverage simulation (document 3, rule of value 5): deterministic, computed with the
 * same formulas the service credits with (earned, splitAmount, maturityValue, coveragePct).
 *
 * Each month every member is credited once for `units_per_month` units; the credit's reserve_share
 * goes to the reserve pool and its ecosystem_share is split into the four categories; then each
 * member exchanges `exchange_pct` percent of that month's earned RU into CU in the same stage,
 * which adds cu x 600 / coin% to the maturity obligation. Shortfall = obligation - CU exchanged.
 * Reserve coverage = reserve / shortfall; combined = (reserve + ecosystem realizable) / shortfall,
 * realizable = every category but infrastructure.
 */
export const simulationParamsSchema = z
  .object({
    members: z.number().int().min(1).max(1_000_000).default(100),
    months: z.number().int().min(1).max(150).default(12),
    grade: z.number().int().min(1).max(9).default(3),
    /** false: every member keeps `grade`; true: the grade follows the score as members work. */
    promote: z.boolean().default(false),
    v: z.number().int().min(V_MIN).max(V_MAX).default(100),
    units_per_month: z.number().int().min(1).max(UNITS_PER_WORK_MONTH).default(27),
    stage: z.enum(STAGES.map((s) => s.stage) as [string, ...string[]]).default('S0'),
    exchange_pct: z.number().int().min(0).max(100).default(100),
    split: z
      .object({
        service: z.number().int(),
        module: z.number().int(),
        content: z.number().int(),
        infrastructure: z.number().int(),
      })
      .optional(),
  })
  .strict();

export type SimulationParams = z.input<typeof simulationParamsSchema>;

export function coverageSimulation(params: SimulationParams = {}, defaultSplit: Split = DEFAULT_SPLIT) {
  const p = parseInput(simulationParamsSchema, params);
  let split: Split;
  try {
    split = checkSplit(p.split ?? defaultSplit);
  } catch (e) {
    throw badRequest('invalid_split', (e as Error).message);
  }
  const stage = stageByCode(p.stage);
  const n = p.members;

  // Per member (all members are identical, so totals are per-member figures times n).
  let score = p.promote ? gradeByNumber(p.grade).threshold : 0;
  let reserve = 0;
  const eco: Split = { service: 0, module: 0, content: 0, infrastructure: 0 };
  let ruEarned = 0;
  let cuExchanged = 0;
  let obligation = 0;

  const series = [];
  for (let month = 1; month <= p.months; month++) {
    const grade = p.promote ? gradeFor(score) : gradeByNumber(p.grade);
    const e = earned(p.units_per_month, grade.pct, p.v, stage.pct);
    ruEarned += e;
    reserve += e;
    const parts = splitAmount(e, split);
    for (const k of ECOSYSTEM_CATEGORIES) eco[k] += parts[k];
    const lot = Math.floor((e * p.exchange_pct) / 100);
    cuExchanged += lot;
    obligation += maturityValue(lot, stage.pct);
    if (p.promote) score = scoreOf(score + p.units_per_month, excessOf(p.v));

    const ecoTotal = eco.service + eco.module + eco.content + eco.infrastructure;
    const realizable = ecoTotal - eco.infrastructure;
    const shortfall = Math.max(0, obligation - cuExchanged);
    series.push({
      month,
      stage: stage.stage,
      grade: grade.grade,
      earned_ru: toWire(e * n),
      total_ru: toWire(ruEarned * n),
      reserve: toWire(reserve * n),
      ecosystem: {
        service: toWire(eco.service * n),
        module: toWire(eco.module * n),
        content: toWire(eco.content * n),
        infrastructure: toWire(eco.infrastructure * n),
        total: toWire(ecoTotal * n),
      },
      ecosystem_realizable: toWire(realizable * n),
      cu_exchanged: toWire(cuExchanged * n),
      maturity_obligation: toWire(obligation * n),
      maturity_shortfall: toWire(shortfall * n),
      reserve_coverage_pct: coveragePct(reserve, shortfall),
      combined_coverage_pct: coveragePct(reserve + realizable, shortfall),
    });
  }
  const last = series[series.length - 1]!;
  return {
    assumptions: {
      members: n,
      months: p.months,
      grade: p.grade,
      grade_pct: gradeByNumber(p.grade).pct,
      promote: p.promote,
      v: p.v,
      units_per_month: p.units_per_month,
      stage: stage.stage,
      coin_pct: stage.pct,
      exchange_pct: p.exchange_pct,
      exchange_timing: 'each month, right after the credit, in the same stage',
      split,
      realizable: 'every ecosystem category except infrastructure (consumed, not realizable)',
      rounding: 'earned RU and maturity values rounded down to the hundredth; split remainder to infrastructure',
      text:
        `${n} members at grade ${p.grade} (${gradeByNumber(p.grade).pct}%)` +
        `${p.promote ? ' promoted as their score grows' : ', grade held'}, v ${p.v}, ` +
        `${p.units_per_month} units a month for ${p.months} months, all credited in ${stage.stage} ` +
        `(coin ${stage.pct}%), each member exchanging ${p.exchange_pct}% of the month's RU to CU the same ` +
        `month; ecosystem split ${split.service}/${split.module}/${split.content}/${split.infrastructure}.`,
    },
    series,
    final: {
      reserve_coverage_pct: last.reserve_coverage_pct,
      combined_coverage_pct: last.combined_coverage_pct,
      remainder_pct:
        last.combined_coverage_pct === null
          ? null
          : Math.max(0, Math.round((100 - last.combined_coverage_pct) * 100) / 100),
      remainder_note: 'the remainder is to be covered by growth of ecosystem value (document 3, rule 5)',
    },
  };
}
