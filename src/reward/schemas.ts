import { z } from 'zod';

/**
 * The answers of the reward plan's routes (docs/reward.md, docs/api.md), as /openapi.json declares
 * them and the tests' contract check holds every answer to. RU and CU are numbers with at most two
 * decimals; instants are ISO 8601 strings.
 */

const amount = z.number().describe('RU or CU, at most 2 decimals');
const int = z.number().int();
const iso = z.string().describe('ISO 8601 instant');
const stage = z.enum(['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6']);
const split = z.object({ service: amount, module: amount, content: amount, infrastructure: amount });
const splitPct = z.object({ service: z.number(), module: z.number(), content: z.number(), infrastructure: z.number() });
const pct = z.number().nullable().describe('percent with 2 decimals; null when undefined (no shortfall)');

const member = z.object({
  id: z.string(),
  name: z.string(),
  grade: int.min(1).max(9),
  grade_name: z.string(),
  kc: int,
  ru: amount,
  cu: amount,
  excess: int,
  score: int,
});
const zone = z.object({ id: z.string(), country: z.string(), lang: z.string(), name: z.string(), members: int, capacity: int, created_at: iso });

const entryHead = { seq: int, id: z.string(), at: iso, member: z.string(), ru: amount, stage, coin_pct: z.number() };
const creditEntry = z.object({
  ...entryHead,
  kind: z.literal('credit'),
  cu: z.null(),
  kc: int,
  v: int,
  grade: int,
  grade_pct: z.number(),
  new_grade: int,
  create_3x: amount,
  member_share: amount,
  ecosystem_share: amount,
  reserve_share: amount,
});
const exchangeEntry = z.object({ ...entryHead, kind: z.literal('exchange'), cu: amount, maturity_value: amount });
const ecoEntry = z.object({ seq: int, id: z.string(), ledger_seq: int, member: z.string(), at: iso, amount, categories: split });

const ledgerTotals = z.object({ entries: int, units: int, ru_earned: amount, ru_burned: amount, cu_minted: amount, ru_outstanding: amount });

const outboxRecord = z.object({
  id: z.string(),
  dest: z.string(),
  payload: z.unknown(),
  createdAt: z.number(),
  attempts: int,
  due: z.number(),
  lastAttemptAt: z.number().optional(),
  lastError: z.string().optional(),
  lastDelayMs: z.number().optional(),
  /** The partition the item lives in (absent: written before the partitions, not yet moved). */
  partition: int.optional(),
  inFlight: z.boolean(),
});

export const rewardResponses = {
  stats: z.object({ members: int, cultures: int, total_ru: amount, progress: z.number(), stage }),
  maturity: z.object({
    days_left: int,
    progress: z.number(),
    stage,
    end_year: int,
    today: z.string(),
    end_date: z.string(),
    plan_days: int,
    coin_pct: z.number(),
  }),
  member: member.extend({ zone: z.string().nullable(), created_at: iso.nullable() }),
  work: z.object({
    id: z.string(),
    earned_ru: amount,
    new_grade: int,
    new_total_kc: int,
    create_3x: amount,
    member_share: amount,
    ecosystem_share: amount,
    reserve_share: amount,
    grade: int,
    new_grade_name: z.string(),
    promoted: z.boolean(),
    stage,
    coin_pct: z.number(),
    ru: amount,
    units_today: int,
    units_month: int,
    credit_id: z.string(),
    seq: int,
  }),
  exchange: z.object({
    id: z.string(),
    ru_burned: amount,
    cu_minted: amount,
    stage,
    maturity_value: amount,
    coin_pct: z.number(),
    maturity_multiple: z.number(),
    ru: amount,
    cu: amount,
    exchange_id: z.string(),
    seq: int,
  }),
  culture: z.object({ ok: z.literal(true), country: z.string(), lang: z.string(), name: z.string(), total_cultures: int, id: z.string(), created: z.boolean() }),
  declare: z.object({
    title: z.string(),
    principles: z.array(z.object({ number: int, text: z.string().nullable(), configured: z.boolean(), source: z.string() })),
    configured: int,
  }),
  spec: z.looseObject({
    service: z.looseObject({ name: z.string(), version: z.string() }),
    figures: z.looseObject({}),
    grades: z.array(z.looseObject({})),
    stages: z.array(z.looseObject({})),
    principles: z.array(z.looseObject({})),
  }),
  createdMember: member.extend({ zone: z.string(), zone_members: int, public_key: z.string().nullable(), created_at: iso }),
  zones: z.object({ total: int, zones: z.array(zone) }),
  zone,
  ledger: z.object({
    totals: z.union([ledgerTotals.extend({ credits: int, exchanges: int }), ledgerTotals.extend({ member: z.string() })]),
    entries: z.array(z.discriminatedUnion('kind', [creditEntry, exchangeEntry])),
    next_before: int.nullable(),
  }),
  ecosystem: z.object({
    split_pct: splitPct,
    totals: split,
    total: amount,
    realizable: amount,
    entries_count: int,
    sync_cursor: z.object({ seq: int, at: iso.nullable() }),
    entries: z.array(ecoEntry),
    next_before: int.nullable(),
  }),
  sync: z.object({
    source: z.literal('maru-reward'),
    version: z.string(),
    generated_at: iso,
    period: z.object({ from: iso.nullable(), to: iso }),
    cursor: z.object({ from: int, to: int, more: z.boolean() }),
    split_pct: splitPct,
    totals: split,
    total: amount,
    realizable: amount,
    period_totals: split,
    period_total: amount,
    entries: z.array(ecoEntry),
  }),
  reserve: z.object({
    balance: amount,
    credits: int,
    lots: int,
    lots_cu: amount,
    maturity_obligation: amount,
    maturity_shortfall: amount,
    ecosystem_realizable: amount,
    reserve_coverage_pct: pct,
    combined_coverage_pct: pct,
    note: z.string().nullable(),
    by_stage: z.array(z.object({ stage, lots: int, cu: amount, maturity_obligation: amount })),
  }),
  sessions: z.object({
    member: z.string(),
    limits: z.object({ units_per_day: int, units_per_month: int }),
    today: z.object({ date: z.string(), units: int, remaining: int }),
    month: z.object({ month: z.string(), units: int, remaining: int }),
    months: z.array(z.object({ month: z.string(), units: int, days: z.array(z.object({ date: z.string(), units: int })) })),
  }),
  simulation: z.object({
    assumptions: z.looseObject({ members: int, months: int, grade: int, stage, text: z.string() }),
    series: z.array(
      z.looseObject({
        month: int,
        stage,
        earned_ru: amount,
        reserve: amount,
        ecosystem: split.extend({ total: amount }),
        maturity_shortfall: amount,
        reserve_coverage_pct: pct,
        combined_coverage_pct: pct,
      }),
    ),
    final: z.object({ reserve_coverage_pct: pct, combined_coverage_pct: pct, remainder_pct: z.number().nullable(), remainder_note: z.string() }),
  }),
  outbox: z.object({
    stats: z.object({ pending: int, held: int, delivered: int, failedAttempts: int, oldestPendingAt: z.number().optional() }),
    pending: z.array(outboxRecord),
  }),
};
