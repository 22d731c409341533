import type { Principle } from './charter.js';
import {
  BASE_RU,
  GRADES,
  MAX_RU_PER_MONTH,
  PLAN_CALENDAR_DAYS,
  PLAN_DAYS,
  PLAN_END,
  PLAN_END_YEAR,
  PLAN_START,
  STAGES,
  UNITS_PER_DAY,
  UNITS_PER_WORK_MONTH,
  UNIT_SECONDS,
  V_MAX,
  V_MIN,
  WORK_MONTH_DAYS,
  ZONE_CAPACITY,
  earned,
  maturityValue,
  toWire,
  type Split,
} from './plan.js';

/** /spec and /readme: the service described from its own constants (nothing typed twice). */

export const SERVICE_NAME = 'maru reward plan';
export const SERVICE_VERSION = '1.0';

/** One route as /spec lists it: its method, path, query keys and answer fields (or what it answers). */
export interface RouteLine {
  method: string;
  path: string;
  query: string[];
  response: string | string[];
}

/** The dashboard page at / (a page, not a route declaration). */
const PAGE_LINE: RouteLine = { method: 'GET', path: '/', query: [], response: 'HTML dashboard (principles, three-way split, coverage rate)' };

/** The keys of an object schema (through a pipe or refinement), or none. */
function keysOf(schema: unknown): string[] | undefined {
  let s = schema as { shape?: Record<string, unknown>; _zod?: { def?: { in?: unknown; innerType?: unknown } } } | undefined;
  for (let i = 0; s && i < 4; i++) {
    if (s.shape) return Object.keys(s.shape);
    s = (s._zod?.def?.in ?? s._zod?.def?.innerType) as typeof s;
  }
  return undefined;
}

/**
 * The routes /spec lists, read from their declarations (routes.ts): query keys from the query
 * schema, answer fields from the response schema (or the route's summary), so nothing is typed twice.
 */
export function routeLines(defs: readonly { method: string; path: string; query?: unknown; response?: unknown; summary?: string }[]): RouteLine[] {
  return [
    PAGE_LINE,
    ...defs.map((d) => ({
      method: d.method,
      path: d.path,
      query: keysOf(d.query) ?? [],
      response: d.summary ?? keysOf(d.response) ?? 'text',
    })),
  ];
}

export function buildSpec(principles: Principle[], split: Split, routes: RouteLine[] = [PAGE_LINE]) {
  return {
    service: {
      name: SERVICE_NAME,
      version: SERVICE_VERSION,
      description:
        'Members of cultural zones perform ecosystem tasks in work units and receive RU; RU is exchanged for CU 1:1.',
      amounts: 'RU and CU are numbers with at most 2 decimals (kept as integer hundredths internally)',
      time_zone: 'Asia/Seoul (UTC+9): days, months and stage years are KST calendar ones',
    },
    figures: {
      unit_seconds: UNIT_SECONDS,
      units_per_day: UNITS_PER_DAY,
      units_per_work_month: UNITS_PER_WORK_MONTH,
      work_month_days: WORK_MONTH_DAYS,
      base_ru: BASE_RU,
      max_ru_per_month: MAX_RU_PER_MONTH,
      zone_capacity: ZONE_CAPACITY,
      grades: GRADES.length,
      plan: {
        start: PLAN_START,
        end: PLAN_END,
        days: PLAN_DAYS,
        calendar_days: PLAN_CALENDAR_DAYS,
        end_year: PLAN_END_YEAR,
      },
    },
    grades: GRADES.map((g) => ({ grade: g.grade, name: g.name, threshold: g.threshold, multiplier_pct: g.pct })),
    stages: STAGES.map((s) => ({
      stage: s.stage,
      from_year: s.from,
      to_year: s.to,
      coin_pct: s.pct,
      circulation: `1/${s.circulation}`,
      maturity_multiple: toWire(maturityValue(100, s.pct)),
    })),
    principles,
    amplification: {
      formula: 'earned_ru = 800 x grade% x v% x coin% x kc / 27, rounded down to 0.01 RU',
      parts: {
        base_ru: BASE_RU,
        per_units: UNITS_PER_WORK_MONTH,
        grade_pct: { min: GRADES[0]!.pct, max: GRADES[GRADES.length - 1]!.pct, grades: GRADES.length },
        v_pct: {
          min: V_MIN,
          max: V_MAX,
          phases: ['completeness', 'reusability', 'contribution', 'innovation'],
        },
        coin_pct: { min: STAGES[0]!.pct, max: STAGES[STAGES.length - 1]!.pct, stages: STAGES.length },
        maximum: `800 x 300% x 200% x 600% = ${MAX_RU_PER_MONTH} RU per 27 units`,
      },
      three_fold: {
        create_3x: '3 x earned_ru',
        member_share: 'earned_ru',
        ecosystem_share: 'earned_ru',
        reserve_share: 'earned_ru',
      },
      maturity_value: 'cu x 600 / coin% of the stage of the exchange',
      grade_score: 'kc + sum of (v - 100) over the member\'s works',
    },
    ecosystem: {
      categories: ['service', 'module', 'content', 'infrastructure'],
      split_pct: split,
      remainder: 'infrastructure',
      realizable: 'every category except infrastructure',
    },
    integration: {
      routes,
      value_service: {
        method: 'POST',
        path: '/api/inflow',
        payload: ['id', 'member', 'amount', 'categories', 'at'],
        delivery: 'outbox, at least once, idempotent by id',
      },
      task_ledger: {
        transport: 'task ledger service (TCP); stand-in: GET /, /health, /tasks, GET|POST /verify, GET|POST /ledger',
        payload: ['id', 'member', 'kc', 'v', 'earned_ru', 'at'],
        delivery: 'outbox, at least once, idempotent by id',
      },
      events: { topic: 'reward', types: ['work', 'exchange', 'member', 'culture'] },
    },
  };
}

export function buildReadme(principles: Principle[], split: Split): string {
  const ex = toWire(earned(3, 100, 120, 100));
  const grades = GRADES.map((g) => `| ${g.grade} | ${g.name} | ${g.threshold} | ${g.pct}% |`).join('\n');
  const stages = STAGES.map(
    (s) => `| ${s.stage} | ${s.from}${s.to === null ? ' onward' : `-${s.to}`} | ${s.pct}% | ${toWire(maturityValue(100, s.pct))}x |`,
  ).join('\n');
  const charter = principles
    .map((p) => `${p.number}. ${p.text ?? '(not configured by the operator)'}`)
    .join('\n');
  return `# ${SERVICE_NAME} (version ${SERVICE_VERSION})

Members of cultural zones perform ecosystem tasks in work units and receive RU (reward units);
RU is exchanged for CU (coin units) at 1:1. The plan runs from ${PLAN_START} to ${PLAN_END}
(${PLAN_DAYS} days). Every credit creates three times the paid value: the member, the ecosystem
ledger and the reserve pool each receive the earned amount.

## Numbers
- One work unit: ${UNIT_SECONDS} s (53 min 20 s). ${UNITS_PER_DAY} units a day; a work month is
  ${WORK_MONTH_DAYS} days x ${UNITS_PER_DAY} = ${UNITS_PER_WORK_MONTH} units; a calendar month holds at most ${UNITS_PER_WORK_MONTH} units.
- Earned RU = ${BASE_RU} x grade% x v% x coin% x kc / ${UNITS_PER_WORK_MONTH}, rounded down to 0.01.
  Maximum ${MAX_RU_PER_MONTH} RU a month (800 x 300% x 200% x 600%).
- A cultural zone holds at most ${ZONE_CAPACITY} members.
- Days, months and stage years follow the calendar in Korea (UTC+9).
- Amounts are numbers with at most 2 decimals.

## Grades (score = kc + cumulative excess, excess of one work = v - 100)
| Grade | Name | Threshold | Multiplier |
|---|---|---|---|
${grades}

## Coin stages (by calendar year)
| Stage | Years | Coin | Maturity value of 1 CU exchanged then |
|---|---|---|---|
${stages}

## Routes (all GET; /work, /exchange and /culture change state)
- \`/stats\`: members, cultures, total_ru, progress, stage.
- \`/maturity\`: days_left, progress, stage, end_year.
- \`/culture?country=KR&lang=ko&name=Seoul%20Arts\`: registers a cultural zone (idempotent):
  \`{"ok":true,"country":"KR","lang":"ko","name":"Seoul Arts","total_cultures":1,"id":"KR-ko-seoul-arts","created":true}\`
- \`/member?id=m_...\`: id, name, grade, grade_name, kc, ru, cu.
- \`/work?id=m_...&kc=3&v=120\`: credits 3 units assessed at 120%. For a grade 1 member (60%) in S0:
  earned_ru = 800 x 0.6 x 1.2 x 1.0 x 3 / 27 = ${toWire(earned(3, 60, 120, 100))}; at grade 3 (100%) it is ${ex}.
  Response: id, earned_ru, new_grade, new_total_kc, create_3x, member_share, ecosystem_share, reserve_share.
- \`/exchange?id=m_...&amt=17.77\`: burns 17.77 RU and mints 17.77 CU; response id, ru_burned,
  cu_minted, stage, maturity_value.
- \`/declare\`: the nine principles. \`/spec\`: this service as JSON. \`/readme\`: this guide.

## Refusals
- 400: kc not an integer 1..27, v not an integer 100..200, amt not above 0 with at most 2 decimals.
- 404: unknown member or zone.
- 409: plan_not_started, plan_ended, daily_units_exceeded (past ${UNITS_PER_DAY} units a day),
  monthly_units_exceeded (past ${UNITS_PER_WORK_MONTH} units a calendar month), insufficient_ru, zone_full.

## Ledgers
- Reward ledger: every credit and exchange, in order.
- Ecosystem ledger: the ecosystem share of each credit split ${split.service}/${split.module}/${split.content}/${split.infrastructure}
  into service, module, content and infrastructure; synchronised to the value service (POST /api/inflow).
- Reserve pool: receives the reserve share of each credit; reports the maturity shortfall and
  the coverage by the reserve alone and by reserve plus realizable ecosystem value.

## Charter
${charter}
`;
}
