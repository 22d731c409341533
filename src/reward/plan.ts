/**
 * The reward plan's figures and pure formulas (document 3, "Reward plan"). No I/O, no clock: every
 * function takes the instant or the amounts it needs.
 *
 * Amounts are integer hundredths ("centi") of RU or CU so every sum is exact; `toWire` turns them
 * into numbers with at most 2 decimals for responses.
 */

// ---------------------------------------------------------------------------------------------
// Key figures

/** One work unit: 53 min 20 s. */
export const UNIT_SECONDS = 3200;
export const UNITS_PER_DAY = 3;
/** A work month is 9 days x 3 units; the calendar month holds at most this many units. */
export const UNITS_PER_WORK_MONTH = 27;
export const WORK_MONTH_DAYS = 9;
/** Base reward for 27 units, in RU. */
export const BASE_RU = 800;
/** 800 x 300% x 200% x 600%. */
export const MAX_RU_PER_MONTH = 28800;
export const ZONE_CAPACITY = 6561;
export const V_MIN = 100;
export const V_MAX = 200;

export const PLAN_START = '2026-04-05';
export const PLAN_END = '2038-09-30';
export const PLAN_END_YEAR = 2038;
/**
 * The plan period as the document states it. The calendar count between the two dates is
 * different (see PLAN_CALENDAR_DAYS); the document's figure is kept as the base of `progress`.
 */
export const PLAN_DAYS = 4555;

/** Korea Standard Time: UTC+9, no daylight saving. */
export const KST_OFFSET_MS = 9 * 3600 * 1000;
const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------------------------
// Amounts

export type Centi = number;

export const toWire = (c: Centi): number => c / 100;

/** True when `n` is a finite number whose shortest decimal form has at most 2 decimals. */
export const hasAtMost2Decimals = (n: number): boolean =>
  Number.isFinite(n) && /^-?\d+(?:\.\d{1,2})?$/.test(String(n));

/**
 * Parses a non-negative wire amount (number, or decimal string) into hundredths; undefined when it
 * is not a plain decimal with at most 2 decimals or is beyond 10^13.
 */
export function parseCenti(amount: number | string): Centi | undefined {
  const text = typeof amount === 'number' ? (Number.isFinite(amount) ? String(amount) : '') : amount.trim();
  const m = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * 100 + Number(((m[2] ?? '') + '00').slice(0, 2));
}

// ---------------------------------------------------------------------------------------------
// Grades

export interface Grade {
  grade: number;
  name: string;
  threshold: number;
  /** Reward multiplier in percent. */
  pct: number;
}

export const GRADES: readonly Grade[] = Object.freeze([
  { grade: 1, name: '입문', threshold: 0, pct: 60 },
  { grade: 2, name: '견습', threshold: 27, pct: 80 },
  { grade: 3, name: '정규', threshold: 81, pct: 100 },
  { grade: 4, name: '숙련', threshold: 216, pct: 125 },
  { grade: 5, name: '전문', threshold: 540, pct: 150 },
  { grade: 6, name: '장인', threshold: 1080, pct: 185 },
  { grade: 7, name: '명장', threshold: 2160, pct: 225 },
  { grade: 8, name: '거장', threshold: 3240, pct: 260 },
  { grade: 9, name: '종장', threshold: 4050, pct: 300 },
]);

/** The highest grade whose threshold is at or below the score. */
export function gradeFor(score: number): Grade {
  let g = GRADES[0]!;
  for (const x of GRADES) if (x.threshold <= score) g = x;
  return g;
}

export function gradeByNumber(n: number): Grade {
  const g = GRADES[n - 1];
  if (!g) throw new RangeError(`no grade ${n}`);
  return g;
}

/** Score = cumulative work units + cumulative excess added value. */
export const scoreOf = (kc: number, excess: number): number => kc + excess;

/** Excess added value of one work: v - 100. */
export const excessOf = (v: number): number => v - 100;

// ---------------------------------------------------------------------------------------------
// Coin stages

export type StageCode = 'S0' | 'S1' | 'S2' | 'S3' | 'S4' | 'S5' | 'S6';

export interface Stage {
  stage: StageCode;
  /** First calendar year of the stage. */
  from: number;
  /** Last calendar year, or null for "onward". */
  to: number | null;
  /** Coin multiplier in percent. */
  pct: number;
  /** CU circulation as a fraction of the issuance cap: 1/denominator. */
  circulation: number;
}

export const STAGES: readonly Stage[] = Object.freeze([
  { stage: 'S0', from: 2026, to: 2027, pct: 100, circulation: 729 },
  { stage: 'S1', from: 2028, to: 2029, pct: 135, circulation: 243 },
  { stage: 'S2', from: 2030, to: 2031, pct: 182, circulation: 81 },
  { stage: 'S3', from: 2032, to: 2033, pct: 245, circulation: 27 },
  { stage: 'S4', from: 2034, to: 2035, pct: 330, circulation: 9 },
  { stage: 'S5', from: 2036, to: 2037, pct: 445, circulation: 3 },
  { stage: 'S6', from: 2038, to: null, pct: 600, circulation: 1 },
] satisfies Stage[]);

/** Coin multiplier at maturity (S6), in percent. */
export const MATURITY_PCT = 600;

/** The stage of a calendar year; years before 2026 (before the plan) read as S0. */
export function stageForYear(year: number): Stage {
  let s = STAGES[0]!;
  for (const x of STAGES) if (x.from <= year) s = x;
  return s;
}

/** The stage at an instant, by the calendar year in KST. */
export const stageFor = (ms: number): Stage => stageForYear(kstYear(ms));

export function stageByCode(code: string): Stage {
  const s = STAGES.find((x) => x.stage === code);
  if (!s) throw new RangeError(`no stage ${code}`);
  return s;
}

// ---------------------------------------------------------------------------------------------
// Formulas

/**
 * Earned RU, in hundredths, for `kc` units: 800 x grade% x v% x coin% x kc / 27, rounded down to the
 * hundredth. Exact integer arithmetic (the largest numerator, 7.8e13, is far below 2^53).
 */
export function earned(kc: number, gradePct: number, vPct: number, coinPct: number): Centi {
  const num = BASE_RU * 100 * gradePct * vPct * coinPct * kc;
  return Math.floor(num / (UNITS_PER_WORK_MONTH * 1_000_000));
}

/** Maturity value of CU exchanged in a stage: cu x 600 / coin%, rounded down to the hundredth. */
export function maturityValue(cu: Centi, coinPct: number): Centi {
  return Math.floor((cu * MATURITY_PCT) / coinPct);
}

export type Split = {
  service: number;
  module: number;
  content: number;
  infrastructure: number;
};

export const ECOSYSTEM_CATEGORIES = ['service', 'module', 'content', 'infrastructure'] as const;
export type EcosystemCategory = (typeof ECOSYSTEM_CATEGORIES)[number];

export const DEFAULT_SPLIT: Readonly<Split> = Object.freeze({
  service: 30,
  module: 20,
  content: 20,
  infrastructure: 30,
});

/** A split is four non-negative integer percentages summing to 100. */
export function checkSplit(s: Split): Split {
  const vals = ECOSYSTEM_CATEGORIES.map((k) => s[k]);
  if (vals.some((x) => !Number.isInteger(x) || x < 0) || vals.reduce((a, b) => a + b, 0) !== 100) {
    throw new RangeError('ecosystem split must be four non-negative integer percentages summing to 100');
  }
  return { service: s.service, module: s.module, content: s.content, infrastructure: s.infrastructure };
}

/**
 * Splits an amount (hundredths) into the four categories: each takes floor(amount x pct / 100), the
 * rounding remainder goes to infrastructure, so the parts always sum to the amount.
 */
export function splitAmount(amount: Centi, split: Split): Split {
  const service = Math.floor((amount * split.service) / 100);
  const module_ = Math.floor((amount * split.module) / 100);
  const content = Math.floor((amount * split.content) / 100);
  return { service, module: module_, content, infrastructure: amount - service - module_ - content };
}

/** Coverage as a percentage with 2 decimals, or null when nothing is to be covered. */
export function coveragePct(available: Centi, shortfall: Centi): number | null {
  if (shortfall <= 0) return null;
  return Math.round((available * 10000) / shortfall) / 100;
}

// ---------------------------------------------------------------------------------------------
// Calendar (KST)

/** Days since 1970-01-01 of the KST calendar date of an instant. */
export const kstEpochDay = (ms: number): number => Math.floor((ms + KST_OFFSET_MS) / DAY_MS);

const kstParts = (ms: number) => {
  const d = new Date(ms + KST_OFFSET_MS);
  return { y: d.getUTCFullYear(), m: d.getUTCMonth() + 1, d: d.getUTCDate() };
};

export const kstYear = (ms: number): number => kstParts(ms).y;

const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** KST calendar date 'YYYY-MM-DD'. */
export function kstDate(ms: number): string {
  const p = kstParts(ms);
  return `${pad(p.y, 4)}-${pad(p.m)}-${pad(p.d)}`;
}

/** KST calendar month 'YYYY-MM'. */
export const kstMonth = (ms: number): string => kstDate(ms).slice(0, 7);

/** Days since 1970-01-01 of a 'YYYY-MM-DD' date. */
export function dateEpochDay(date: string): number {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  return Date.UTC(y, m - 1, d) / DAY_MS;
}

/** The instant a KST calendar day starts. */
export const kstDayStartMs = (date: string): number => dateEpochDay(date) * DAY_MS - KST_OFFSET_MS;

export const PLAN_START_DAY = dateEpochDay(PLAN_START);
export const PLAN_END_DAY = dateEpochDay(PLAN_END);
/** Calendar days of the plan, both ends included (the document says 4555; the calendar says 4562). */
export const PLAN_CALENDAR_DAYS = PLAN_END_DAY - PLAN_START_DAY + 1;

export type PlanPhase = 'before' | 'running' | 'ended';

/** Whether work is credited on the KST day of `ms`: from 2026-04-05 to 2038-09-30 inclusive. */
export function planPhase(ms: number): PlanPhase {
  const day = kstEpochDay(ms);
  if (day < PLAN_START_DAY) return 'before';
  if (day > PLAN_END_DAY) return 'ended';
  return 'running';
}

/** Whole days from today (KST) to 2038-09-30, never negative. */
export const daysLeft = (ms: number): number => Math.max(0, PLAN_END_DAY - kstEpochDay(ms));

/** Whole KST days elapsed since 2026-04-05, never negative. */
export const daysElapsed = (ms: number): number => Math.max(0, kstEpochDay(ms) - PLAN_START_DAY);

/** Percent of the plan's 4555 days elapsed, 2 decimals (rounded down), clamped to 0..100. */
export function progress(ms: number): number {
  const p = Math.floor((daysElapsed(ms) * 10000) / PLAN_DAYS) / 100;
  return Math.min(100, Math.max(0, p));
}
