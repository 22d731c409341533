import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { outboxCreatedKey, outboxDueKey, outboxKey, outboxPartition } from '../../src/outbox/records.js';
import { K } from '../../src/reward/keys.js';
import {
  creditDraws,
  creditKeys,
  creditWire,
  exchangeDraws,
  exchangeKeys,
  planCredit,
  planExchange,
  planLedger,
  ledgerDraws,
  ledgerKeys,
  refuseOutsidePlan,
  AlreadyApplied,
  type CreditInput,
  type CreditOutcome,
} from '../../src/reward/movements.js';
import { DEFAULT_SPLIT, gradeByNumber, kstDayStartMs, stageByCode } from '../../src/reward/plan.js';
import type { MemberRecord } from '../../src/reward/records.js';
import { drawn, type Json, type Write } from '../../src/store/port.js';
import { aggregateOf, partitionOf } from '../../src/store/partition.js';

// Document 3, "Reward plan": the two balance movements (a credit of work units, priced at the grade
// before it; an exchange of RU for CU) and their limits, each on both sides of its boundary.

const S0 = stageByCode('S0');
const S3 = stageByCode('S3');
const NOW = Date.parse('2026-05-10T03:00:00Z'); // 12:00 KST on 2026-05-10
const SEQ = drawn(0);
const ECO_SEQ = drawn(1);
const SEQ_MEMBER = drawn(0, 12);

const member = (over: Partial<MemberRecord> = {}): MemberRecord => ({
  id: 'm_1',
  name: 'Lee',
  grade: 1,
  grade_name: '입문',
  kc: 0,
  ru: 0,
  cu: 0,
  excess: 0,
  ...over,
});

const credit = (over: Partial<CreditInput> = {}): CreditInput => ({
  id: 'm_1',
  kc: 1,
  v: 100,
  now: NOW,
  today: '2026-05-10',
  month: '2026-05',
  stage: S0,
  split: { ...DEFAULT_SPLIT },
  creditId: 'c_1',
  ...over,
});

/** The outbox partition of the member m_1 (its deliveries are written beside it). */
const P1 = outboxPartition('reward:member:m_1');
const L = 'reward:{reward-ledger}:';

const session = (units: number, days: Record<string, number>): Json => ({ month: '2026-05', units, days });

function refusal(f: () => unknown): AppError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    return e as AppError;
  }
  throw new Error('expected a refusal');
}

describe('keys and draws', () => {
  it('a credit reads the member and its month session and draws the ledger seq then the ecosystem seq', () => {
    expect(creditKeys('m_1', '2026-05')).toEqual(['reward:member:m_1', 'reward:member:m_1:session:2026-05']);
    expect(creditDraws()).toEqual([`${L}n:entries`, `${L}n:credits`]);
  });
  it('an exchange reads the member and draws the ledger seq', () => {
    expect(exchangeKeys('m_1')).toEqual(['reward:member:m_1']);
    expect(exchangeDraws()).toEqual([`${L}n:entries`]);
  });
  it("a movement's member update stays in the member's aggregate, its ledgers update in the ledgers' one", () => {
    const c = planCredit(credit(), [member(), undefined]);
    const x = planExchange({ id: 'm_1', amt: 1, now: NOW, stage: S0, exchangeId: 'x_1' }, [member({ ru: 5 })]);
    for (const p of [c, x]) {
      const aggs = new Set(p.writes.map((w) => aggregateOf(w.key)).filter((a) => a !== undefined));
      expect([...aggs]).toEqual(['reward:member:m_1']);
      expect(new Set(p.writes.map((w) => partitionOf(w.key)))).toEqual(new Set([partitionOf('reward:member:m_1')]));
      const m = p.result.movement;
      const l = planLedger(m, [undefined]);
      const keys = [...ledgerKeys(m), ...ledgerDraws(m), ...l.writes.map((w) => w.key)];
      expect(new Set(keys.map(aggregateOf))).toEqual(new Set(['reward-ledger']));
    }
  });
  it('a movement the ledgers hold already is refused by its ledgers update with its numbers (nothing drawn)', () => {
    const m = planCredit(credit(), [member(), undefined]).result.movement;
    expect(ledgerKeys(m)).toEqual([`${L}applied:c_1`]);
    let err: unknown;
    try {
      planLedger(m, [{ seq: 7, eco: 5 }]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AlreadyApplied);
    expect((err as AlreadyApplied).applied).toEqual({ seq: 7, eco: 5 });
  });
});

describe('the plan period (2026-04-05 to 2038-09-30, KST days)', () => {
  const start = kstDayStartMs('2026-04-05');
  const afterEnd = kstDayStartMs('2038-10-01');

  it('refuses work before the first KST day with 409 plan_not_started, takes it from its first instant', () => {
    const e = refusal(() => refuseOutsidePlan(start - 1));
    expect(e).toMatchObject({ kind: 'conflict', code: 'plan_not_started', details: { starts: '2026-04-05' } });
    expect(e.status).toBe(409);
    expect(e.message).toBe('the reward plan starts on 2026-04-05 (KST)');
    expect(() => refuseOutsidePlan(start)).not.toThrow();
  });

  it('takes work on the last KST day, refuses it from the next with 409 plan_ended', () => {
    expect(() => refuseOutsidePlan(afterEnd - 1)).not.toThrow();
    const e = refusal(() => refuseOutsidePlan(afterEnd));
    expect(e).toMatchObject({ kind: 'conflict', code: 'plan_ended', details: { ended: '2038-09-30' } });
    expect(e.message).toBe('the reward plan ended on 2038-09-30 (KST)');
  });
});

describe('a credit', () => {
  it('writes the member, the session, both ledger entries, the aggregates and two peer deliveries', () => {
    const m = member();
    const p = planCredit(credit({ kc: 3, v: 120 }), [m, undefined]);
    const ledger = planLedger(p.result.movement, [undefined]);
    // 800 x 60% x 120% x 100% x 3 / 27 = 64.00 RU
    const amount = 6400;
    const parts = { service: 1920, module: 1280, content: 1280, infrastructure: 1920 };
    const at = '2026-05-10T03:00:00.000Z';
    const expected: Write[] = [
      {
        op: 'set',
        key: 'reward:member:m_1',
        value: { id: 'm_1', name: 'Lee', grade: 1, grade_name: '입문', kc: 3, ru: amount, cu: 0, excess: 20 },
      },
      { op: 'set', key: 'reward:member:m_1:session:2026-05', value: { month: '2026-05', units: 3, days: { '2026-05-10': 3 } } },
      { op: 'index', key: 'reward:member:m_1:session-months', member: '2026-05', score: 202605 },
      { op: 'set', key: 'reward:member:m_1:pending:c_1', value: p.result.movement as unknown as Json },
      { op: 'index', key: `reward:pending:{#${P1}}`, member: 'm_1/c_1', score: NOW },
      { op: 'set', key: outboxKey('value:c_1', P1), value: expect.objectContaining({ id: 'value:c_1', dest: 'value', createdAt: NOW }) },
      { op: 'index', key: outboxDueKey(P1), member: 'value:c_1', score: NOW },
      { op: 'index', key: outboxCreatedKey(P1), member: 'value:c_1', score: NOW },
      { op: 'set', key: outboxKey('task-ledger:c_1', P1), value: expect.objectContaining({ id: 'task-ledger:c_1', dest: 'task-ledger' }) },
      { op: 'index', key: outboxDueKey(P1), member: 'task-ledger:c_1', score: NOW },
      { op: 'index', key: outboxCreatedKey(P1), member: 'task-ledger:c_1', score: NOW },
    ];
    expect(p.writes).toEqual(expected);
    expect(ledger.writes).toEqual([
      {
        op: 'set',
        key: K.entry(SEQ),
        value: {
          seq: SEQ,
          id: 'c_1',
          at: NOW,
          member: 'm_1',
          kind: 'credit',
          ru: amount,
          cu: null,
          stage: 'S0',
          coin_pct: 100,
          kc: 3,
          v: 120,
          grade: 1,
          grade_pct: 60,
          new_grade: 1,
          create_3x: 3 * amount,
          member_share: amount,
          ecosystem_share: amount,
          reserve_share: amount,
        },
      },
      { op: 'index', key: `${L}member:m_1`, member: SEQ_MEMBER, score: SEQ },
      {
        op: 'set',
        key: K.ecoEntry(ECO_SEQ),
        value: { seq: ECO_SEQ, id: 'c_1', ledger_seq: SEQ, member: 'm_1', at: NOW, amount, categories: parts },
      },
      { op: 'incr', key: `${L}n:units`, by: 3 },
      { op: 'incr', key: `${L}n:ru_earned`, by: amount },
      { op: 'incr', key: `${L}n:eco:service`, by: 1920 },
      { op: 'incr', key: `${L}n:eco:module`, by: 1280 },
      { op: 'incr', key: `${L}n:eco:content`, by: 1280 },
      { op: 'set', key: `${L}applied:c_1`, value: { seq: SEQ, eco: ECO_SEQ } },
    ]);
    const value = (p.writes[5] as unknown as { value: { payload: Json } }).value.payload;
    expect(value).toEqual({
      id: 'c_1',
      member: 'm_1',
      amount: 64,
      categories: { service: 19.2, module: 12.8, content: 12.8, infrastructure: 19.2 },
      at,
    });
    const task = (p.writes[8] as unknown as { value: { payload: Json } }).value.payload;
    expect(task).toEqual({ id: 'c_1', member: 'm_1', kc: 3, v: 120, earned_ru: 64, at });
    expect(p.result).toEqual({
      amount,
      before: gradeByNumber(1),
      after: gradeByNumber(1),
      kc: 3,
      ru: amount,
      unitsToday: 3,
      unitsMonth: 3,
      movement: {
        kind: 'credit',
        id: 'c_1',
        member: 'm_1',
        entry: expect.objectContaining({ id: 'c_1', kind: 'credit', ru: amount, kc: 3, v: 120 }),
        categories: parts,
        kc: 3,
      },
    });
  });

  it('adds to the stored member and session, and does not index the month again', () => {
    const m = member({ kc: 30, ru: 1000, cu: 500, excess: 5, grade: 2, grade_name: '견습' });
    const p = planCredit(credit({ kc: 1, v: 110, split: { service: 10, module: 20, content: 30, infrastructure: 40 } }), [
      m,
      session(4, { '2026-05-09': 3, '2026-05-10': 1 }),
    ]);
    // grade 2 (80%), v 110%: 800 x 0.8 x 1.1 x 1 x 1 / 27 = 26.074... -> 26.07 RU
    const amount = 2607;
    expect(p.writes.slice(0, 2)).toEqual([
      { op: 'set', key: 'reward:member:m_1', value: { ...m, kc: 31, ru: 1000 + amount, excess: 15 } },
      { op: 'set', key: 'reward:member:m_1:session:2026-05', value: { month: '2026-05', units: 5, days: { '2026-05-09': 3, '2026-05-10': 2 } } },
    ]);
    expect(p.writes.filter((w) => w.key === 'reward:member:m_1:session-months')).toEqual([]);
    // the same writes as a first credit of the month, less the month's index entry
    expect(p.writes.map((w) => `${w.op} ${w.key}`)).toEqual(
      planCredit(credit({ kc: 1, v: 110 }), [m, undefined])
        .writes.filter((w) => w.key !== 'reward:member:m_1:session-months')
        .map((w) => `${w.op} ${w.key}`),
    );
    expect(planLedger(p.result.movement, [undefined]).writes.filter((w) => w.op === 'incr')).toEqual([
      { op: 'incr', key: `${L}n:units`, by: 1 },
      { op: 'incr', key: `${L}n:ru_earned`, by: amount },
      // floor(2607 x 10%) = 260, floor(2607 x 20%) = 521, floor(2607 x 30%) = 782
      { op: 'incr', key: `${L}n:eco:service`, by: 260 },
      { op: 'incr', key: `${L}n:eco:module`, by: 521 },
      { op: 'incr', key: `${L}n:eco:content`, by: 782 },
    ]);
    // a month of the layout before the partitions counts until the member has its own
    const before = planCredit(credit({ kc: 1 }), [m, undefined], session(4, { '2026-05-09': 3, '2026-05-10': 1 }));
    expect(before.result).toMatchObject({ unitsToday: 2, unitsMonth: 5 });
    expect(() => planCredit(credit({ kc: 2 }), [m, undefined], session(4, { '2026-05-10': 2 }))).toThrow(AppError);
    expect(p.result).toMatchObject({ amount, kc: 31, ru: 1000 + amount, unitsToday: 2, unitsMonth: 5 });
  });

  it('is priced by the coin multiplier of its stage', () => {
    // S3 (245%): 800 x 0.6 x 1 x 2.45 x 1 / 27 = 43.555... -> 43.55 RU
    const p = planCredit(credit({ stage: S3 }), [member(), undefined]);
    expect(p.result.amount).toBe(4355);
    expect(planLedger(p.result.movement, [undefined]).writes[0]).toMatchObject({ value: { stage: 'S3', coin_pct: 245 } });
  });

  it('refuses an unknown member with 404 member_not_found', () => {
    const e = refusal(() => planCredit(credit({ id: 'm_9' }), [undefined, undefined]));
    expect(e).toMatchObject({ kind: 'not_found', code: 'member_not_found', message: 'no member m_9' });
  });

  describe('3 units a day', () => {
    it('takes a day up to 3 units: 2 + 1', () => {
      const p = planCredit(credit({ kc: 1 }), [member(), session(2, { '2026-05-10': 2 })]);
      expect(p.result).toMatchObject({ unitsToday: 3, unitsMonth: 3 });
    });
    it('refuses a 4th: 2 + 2 is 409 daily_units_exceeded, with what remains', () => {
      const e = refusal(() => planCredit(credit({ kc: 2 }), [member(), session(2, { '2026-05-10': 2 })]));
      expect(e).toMatchObject({
        kind: 'conflict',
        code: 'daily_units_exceeded',
        message: 'a day holds 3 units',
        details: { units_today: 2, remaining_today: 1, requested: 2, limit: 3 },
      });
    });
    it('a fresh day takes 3 at once and refuses 4', () => {
      expect(planCredit(credit({ kc: 3 }), [member(), session(3, { '2026-05-09': 3 })]).result.unitsToday).toBe(3);
      const e = refusal(() => planCredit(credit({ kc: 4 }), [member(), undefined]));
      expect(e).toMatchObject({ code: 'daily_units_exceeded', details: { units_today: 0, remaining_today: 3, requested: 4 } });
    });
    it('a day stored over the limit reports nothing remaining, never a negative', () => {
      const e = refusal(() => planCredit(credit({ kc: 1 }), [member(), session(4, { '2026-05-10': 4 })]));
      expect(e).toMatchObject({ code: 'daily_units_exceeded', details: { units_today: 4, remaining_today: 0 } });
    });
  });

  describe('27 units a calendar month', () => {
    const days = { '2026-05-01': 3, '2026-05-02': 3, '2026-05-03': 3, '2026-05-04': 3, '2026-05-05': 3, '2026-05-06': 3, '2026-05-07': 3, '2026-05-08': 3 };
    it('takes the month up to 27: 26 + 1', () => {
      const p = planCredit(credit({ kc: 1 }), [member(), session(26, { ...days, '2026-05-09': 2 })]);
      expect(p.result).toMatchObject({ unitsToday: 1, unitsMonth: 27 });
    });
    it('refuses 26 + 2 with 409 monthly_units_exceeded, with what remains', () => {
      const e = refusal(() => planCredit(credit({ kc: 2 }), [member(), session(26, { ...days, '2026-05-09': 2 })]));
      expect(e).toMatchObject({
        kind: 'conflict',
        code: 'monthly_units_exceeded',
        message: 'a calendar month holds 27 units',
        details: { units_month: 26, remaining_month: 1, requested: 2, limit: 27 },
      });
    });
    it('a month stored over the limit reports nothing remaining', () => {
      const e = refusal(() => planCredit(credit({ kc: 1 }), [member(), session(28, days)]));
      expect(e).toMatchObject({ code: 'monthly_units_exceeded', details: { units_month: 28, remaining_month: 0 } });
    });
  });

  describe('grades: priced at the grade before, new_grade after (threshold 27 for grade 2)', () => {
    it('a score of 26 + 1 unit reaches 27: priced at grade 1 (60%), grade 2 after', () => {
      const p = planCredit(credit({ kc: 1, v: 100 }), [member({ kc: 26 }), undefined]);
      // 800 x 0.6 x 1 x 1 x 1 / 27 = 17.777... -> 17.77 RU
      expect(p.result).toMatchObject({ amount: 1777, before: gradeByNumber(1), after: gradeByNumber(2) });
      expect(p.writes[0]).toMatchObject({ value: { grade: 2, grade_name: '견습', kc: 27 } });
      expect(planLedger(p.result.movement, [undefined]).writes[0]).toMatchObject({ value: { grade: 1, grade_pct: 60, new_grade: 2 } });
    });
    it('a score of 25 + 1 unit stays at grade 1', () => {
      const p = planCredit(credit({ kc: 1, v: 100 }), [member({ kc: 25 }), undefined]);
      expect(p.result).toMatchObject({ before: gradeByNumber(1), after: gradeByNumber(1) });
      expect(p.writes[0]).toMatchObject({ value: { grade: 1, grade_name: '입문' } });
    });
    it('the excess added value counts: from a score of 25, 1 unit at v 101 reaches 27, at v 100 stays at 26', () => {
      expect(planCredit(credit({ kc: 1, v: 101 }), [member({ kc: 24, excess: 1 }), undefined]).result.after).toEqual(gradeByNumber(2));
      expect(planCredit(credit({ kc: 1, v: 100 }), [member({ kc: 24, excess: 1 }), undefined]).result.after).toEqual(gradeByNumber(1));
    });
    it('a member at a score of 27 is priced at 80%', () => {
      const p = planCredit(credit({ kc: 1, v: 100 }), [member({ kc: 20, excess: 7 }), undefined]);
      // 800 x 0.8 / 27 = 23.703... -> 23.70 RU
      expect(p.result).toMatchObject({ amount: 2370, before: gradeByNumber(2) });
    });
  });
});

describe('the /work answer and its event', () => {
  const outcome = (before: number, after: number): Omit<CreditOutcome, 'movement'> => ({
    amount: 1777,
    before: gradeByNumber(before),
    after: gradeByNumber(after),
    kc: 27,
    ru: 5000,
    unitsToday: 2,
    unitsMonth: 9,
  });

  it('names every figure, in RU, with create_3x three times the amount', () => {
    const { result, event } = creditWire('m_1', 'c_1', S0, outcome(1, 2), 7);
    expect(result).toEqual({
      id: 'm_1',
      earned_ru: 17.77,
      new_grade: 2,
      new_total_kc: 27,
      create_3x: 53.31,
      member_share: 17.77,
      ecosystem_share: 17.77,
      reserve_share: 17.77,
      grade: 1,
      new_grade_name: '견습',
      promoted: true,
      stage: 'S0',
      coin_pct: 100,
      ru: 50,
      units_today: 2,
      units_month: 9,
      credit_id: 'c_1',
      seq: 7,
    });
    expect(event).toEqual({
      type: 'work',
      id: 'm_1',
      earned_ru: 17.77,
      new_grade: 2,
      new_total_kc: 27,
      create_3x: 53.31,
      member_share: 17.77,
      ecosystem_share: 17.77,
      reserve_share: 17.77,
      stage: 'S0',
      credit_id: 'c_1',
    });
  });

  it('is promoted only when the grade after is higher', () => {
    expect(creditWire('m_1', 'c_1', S0, outcome(2, 2), 1).result.promoted).toBe(false);
    expect(creditWire('m_1', 'c_1', S0, outcome(3, 2), 1).result.promoted).toBe(false);
  });
});

describe('an exchange (RU to CU 1:1, maturity value cu x 600 / coin%)', () => {
  const x = (amt: number, stage = S0) => ({ id: 'm_1', amt, now: NOW, stage, exchangeId: 'x_1' });

  it('burns the RU, mints as much CU and writes the lot with its maturity value', () => {
    const m = member({ ru: 1000, cu: 200 });
    const p = planExchange(x(300), [m]);
    expect(p.writes).toEqual([
      { op: 'set', key: 'reward:member:m_1', value: { ...m, ru: 700, cu: 500 } },
      { op: 'set', key: 'reward:member:m_1:pending:x_1', value: p.result.movement as unknown as Json },
      { op: 'index', key: `reward:pending:{#${P1}}`, member: 'm_1/x_1', score: NOW },
    ]);
    expect(planLedger(p.result.movement, [undefined]).writes).toEqual([
      {
        op: 'set',
        key: K.entry(SEQ),
        value: { seq: SEQ, id: 'x_1', at: NOW, member: 'm_1', kind: 'exchange', ru: 300, cu: 300, stage: 'S0', coin_pct: 100, maturity_value: 1800 },
      },
      { op: 'index', key: `${L}member:m_1`, member: SEQ_MEMBER, score: SEQ },
      { op: 'index', key: `${L}lots`, member: SEQ_MEMBER, score: SEQ },
      { op: 'incr', key: `${L}n:exchanges`, by: 1 },
      { op: 'incr', key: `${L}n:ru_burned`, by: 300 },
      { op: 'incr', key: `${L}n:obligation`, by: 1800 },
      { op: 'incr', key: `${L}n:stage:S0:lots`, by: 1 },
      { op: 'incr', key: `${L}n:stage:S0:cu`, by: 300 },
      { op: 'incr', key: `${L}n:stage:S0:obligation`, by: 1800 },
      { op: 'set', key: `${L}applied:x_1`, value: { seq: SEQ } },
    ]);
    expect(p.result).toMatchObject({ maturityValue: 1800, member: { ...m, ru: 700, cu: 500 } });
  });

  it('in S3 (245%) the maturity value is about 2.4x, rounded down', () => {
    const p = planExchange(x(100, S3), [member({ ru: 100 })]);
    // 100 x 600 / 245 = 244.89... -> 244
    expect(p.result.maturityValue).toBe(244);
    expect(planLedger(p.result.movement, [undefined]).writes.filter((w) => w.op === 'incr').map((w) => w.key)).toContain(`${L}n:stage:S3:obligation`);
  });

  it('takes the whole balance, refuses one hundredth more with 409 insufficient_ru', () => {
    expect(planExchange(x(1000), [member({ ru: 1000 })]).result.member).toMatchObject({ ru: 0, cu: 1000 });
    const e = refusal(() => planExchange(x(1001), [member({ ru: 1000 })]));
    expect(e).toMatchObject({
      kind: 'conflict',
      code: 'insufficient_ru',
      message: 'the amount is above the RU balance',
      details: { balance: 10, requested: 10.01 },
    });
  });

  it('refuses an unknown member with 404 member_not_found', () => {
    const e = refusal(() => planExchange(x(1), [undefined]));
    expect(e).toMatchObject({ kind: 'not_found', code: 'member_not_found', message: 'no member m_1' });
  });
});
