import { conflict, notFound } from '../errors.js';
import { outboxWrites } from '../outbox.js';
import { drawn, type Drawn, type Json, type UpdatePlan, type Write } from '../store/port.js';
import { K, SEQ_WIDTH } from './keys.js';
import {
  PLAN_END,
  PLAN_START,
  UNITS_PER_DAY,
  UNITS_PER_WORK_MONTH,
  earned,
  excessOf,
  gradeFor,
  maturityValue,
  planPhase,
  scoreOf,
  splitAmount,
  toWire,
  type Grade,
  type Split,
  type Stage,
} from './plan.js';
import { memberCodec, sessionCodec } from './codecs.js';
import {
  iso,
  splitWire,
  type CreditEntry,
  type EcoEntry,
  type ExchangeEntry,
  type MemberRecord,
  type SessionRecord,
} from './records.js';

/**
 * The two balance movements of the plan as pure update plans: given the values read for their
 * keys, they check the rules and return every write of the movement (member, ledgers, pools,
 * totals, peer deliveries), to be applied in one atomic store.update. Synchronous and free of side
 * effects, as the Store port requires; refusals are thrown AppErrors (nothing is written then).
 *
 * A movement is two updates, each inside one aggregate (docs/partitions.md). The member's update
 * (planCredit, planExchange) checks the rules on the member's own records and writes the member,
 * its session, the peer deliveries (in the outbox of the member's partition) and the movement
 * itself as pending (`reward:member:<id>:pending:<movement id>`, listed in `reward:pending:{#p}`).
 * The ledgers' update (planLedger, on the one `{reward-ledger}` aggregate) writes the entries and
 * the aggregates once per movement id (its `applied` marker holds the numbers drawn), then the
 * member's pending record is removed (planSettled). The ledger seq (and a credit's ecosystem seq)
 * is drawn inside the ledgers' commit from the counters that number the ledgers (store.update with
 * `draw`: ledgerDraws), so the entries are numbered in commit order without gaps; the writes hold
 * the placeholders SEQ and ECO_SEQ for those numbers, and every aggregate is added to by an `incr`
 * write, never read and rewritten. A movement left pending (a process stopped between the two) is
 * carried by the next start (service.ts), exactly once.
 */

/** The ledger seq of the movement, drawn in its commit from K.n.entries (draw index 0). */
const SEQ = drawn(0);
/** A credit's ecosystem seq, drawn in its commit from K.n.credits (draw index 1). */
const ECO_SEQ = drawn(1);
/** The seq as an index member (keys.ts SEQ_WIDTH: zero-padded, so byte order = number order). */
const SEQ_MEMBER = drawn(0, SEQ_WIDTH);

/** A record to store whose sequence number fields `F` still hold placeholders of drawn numbers. */
type Drafted<T, F extends keyof T> = { [P in keyof T]: P extends F ? Drawn : T[P] };

export interface CreditInput {
  id: string;
  kc: number;
  v: number;
  now: number;
  /** KST date 'YYYY-MM-DD' and month 'YYYY-MM' of `now`. */
  today: string;
  month: string;
  stage: Stage;
  split: Split;
  creditId: string;
}

export const creditKeys = (id: string, month: string): string[] => [K.member(id), K.session(id, month)];

/** A credit draws its ledger seq, then its ecosystem seq (the number of credits). */
export const creditDraws = (): string[] => [K.n.entries, K.n.credits];

/** A movement as the member's update leaves it for the ledgers (stored in its pending record). */
export type Movement =
  | { kind: 'credit'; id: string; member: string; entry: Omit<CreditEntry, 'seq'>; categories: Split; kc: number }
  | { kind: 'exchange'; id: string; member: string; entry: Omit<ExchangeEntry, 'seq'> };

/** The numbers a movement got in the ledgers: its ledger seq (and a credit's ecosystem seq). */
export interface Applied {
  seq: number;
  eco?: number;
}

/** The member's writes that leave a movement pending (removed by planSettled). */
function pendingWrites(m: Movement, now: number): Write[] {
  return [
    { op: 'set', key: K.pending(m.member, m.id), value: m as unknown as Json },
    { op: 'index', key: K.pendingOf(m.member), member: `${m.member}/${m.id}`, score: now },
  ];
}

/** The keys of a movement's ledgers update: its `applied` marker (read: it makes the update once only). */
export const ledgerKeys = (m: Movement): string[] => [K.applied(m.id)];

/** A credit draws its ledger seq and its ecosystem seq, an exchange its ledger seq. */
export const ledgerDraws = (m: Movement): string[] => (m.kind === 'credit' ? creditDraws() : exchangeDraws());

/** Thrown by planLedger for a movement the ledgers hold already (the update then draws nothing). */
export class AlreadyApplied extends Error {
  constructor(readonly applied: Applied) {
    super('movement already in the ledgers');
  }
}

/**
 * The ledgers' update of a movement: the entries, the member's ledger index, the aggregates and the
 * `applied` marker with the numbers drawn. A movement already applied throws AlreadyApplied with
 * its numbers, so the update is abandoned and draws no number (none used twice, none skipped).
 */
export function planLedger(m: Movement, [applied]: (Json | undefined)[]): UpdatePlan<undefined> {
  if (applied !== undefined && applied !== null) throw new AlreadyApplied(applied as unknown as Applied);
  const { entry, member } = m;
  const writes: Write[] = [
    { op: 'set', key: K.entry(SEQ), value: { seq: SEQ, ...entry } as unknown as Json },
    { op: 'index', key: K.memberLedger(member), member: SEQ_MEMBER, score: SEQ },
  ];
  if (m.kind === 'credit') {
    const amount = m.entry.ru;
    const parts = m.categories;
    const ecoEntry: Drafted<EcoEntry, 'seq' | 'ledger_seq'> = { seq: ECO_SEQ, id: m.id, ledger_seq: SEQ, member, at: m.entry.at, amount, categories: parts };
    writes.push(
      { op: 'set', key: K.ecoEntry(ECO_SEQ), value: ecoEntry },
      // the aggregates (the credits counter is drawn from): RU earned is also the ecosystem total and
      // the reserve balance (keys.ts)
      { op: 'incr', key: K.n.units, by: m.kc },
      { op: 'incr', key: K.n.ruEarned, by: amount },
      { op: 'incr', key: K.n.ecoService, by: parts.service },
      { op: 'incr', key: K.n.ecoModule, by: parts.module },
      { op: 'incr', key: K.n.ecoContent, by: parts.content },
      { op: 'set', key: K.applied(m.id), value: { seq: SEQ, eco: ECO_SEQ } },
    );
  } else {
    const amt = m.entry.ru;
    const mv = m.entry.maturity_value;
    const stage = m.entry.stage;
    writes.push(
      // the exchange is a lot of the reserve pool, remembered with its stage
      { op: 'index', key: K.lots, member: SEQ_MEMBER, score: SEQ },
      // RU burned is also the CU minted and the CU of the lots (keys.ts)
      { op: 'incr', key: K.n.exchanges, by: 1 },
      { op: 'incr', key: K.n.ruBurned, by: amt },
      { op: 'incr', key: K.n.obligation, by: mv },
      { op: 'incr', key: K.n.stageLots(stage), by: 1 },
      { op: 'incr', key: K.n.stageCu(stage), by: amt },
      { op: 'incr', key: K.n.stageObligation(stage), by: mv },
      { op: 'set', key: K.applied(m.id), value: { seq: SEQ } },
    );
  }
  return { writes, result: undefined };
}

/** The member's update once the ledgers hold the movement: its pending record goes (with `extra` writes). */
export function planSettled(member: string, movementId: string, extra: Write[] = []): UpdatePlan<undefined> {
  return {
    writes: [{ op: 'del', key: K.pending(member, movementId) }, { op: 'unindex', key: K.pendingOf(member), member: `${member}/${movementId}` }, ...extra],
    result: undefined,
  };
}

/** What a credit's update returns; its ledger seq is the first number drawn. */
export interface CreditOutcome {
  amount: number;
  before: Grade;
  after: Grade;
  kc: number;
  ru: number;
  unitsToday: number;
  unitsMonth: number;
  /** What the ledgers' update writes (planLedger). */
  movement: Movement;
}

/** Work is credited only while the plan runs: 409 plan_not_started before it, plan_ended after. */
export function refuseOutsidePlan(now: number): void {
  const phase = planPhase(now);
  if (phase === 'before') throw conflict('plan_not_started', `the reward plan starts on ${PLAN_START} (KST)`, { starts: PLAN_START });
  if (phase === 'ended') throw conflict('plan_ended', `the reward plan ended on ${PLAN_END} (KST)`, { ended: PLAN_END });
}

/**
 * The member's update of a credit. `current` holds the member and its month session; `before`, the
 * month's session of the layout before the partitions (`earlier`, no longer written), counted when the member
 * has no session of the month under its own key yet.
 */
export function planCredit(c: CreditInput, current: (Json | undefined)[], earlier?: Json): UpdatePlan<CreditOutcome> {
  const [m, own] = current;
  const s = own ?? earlier;
  const { id, kc, v, now, today, month, stage, creditId } = c;
  const member = memberCodec.decode(m);
  if (!member) throw notFound('member_not_found', `no member ${id}`);
  const session = sessionCodec.decode(s) ?? { month, units: 0, days: {} };
  const unitsToday = session.days[today] ?? 0;
  if (unitsToday + kc > UNITS_PER_DAY) {
    throw conflict('daily_units_exceeded', `a day holds ${UNITS_PER_DAY} units`, {
      units_today: unitsToday,
      remaining_today: Math.max(0, UNITS_PER_DAY - unitsToday),
      requested: kc,
      limit: UNITS_PER_DAY,
    });
  }
  if (session.units + kc > UNITS_PER_WORK_MONTH) {
    throw conflict('monthly_units_exceeded', `a calendar month holds ${UNITS_PER_WORK_MONTH} units`, {
      units_month: session.units,
      remaining_month: Math.max(0, UNITS_PER_WORK_MONTH - session.units),
      requested: kc,
      limit: UNITS_PER_WORK_MONTH,
    });
  }
  // The grade before the credit prices it; the grade after is new_grade.
  const before = gradeFor(scoreOf(member.kc, member.excess));
  const amount = earned(kc, before.pct, v, stage.pct);
  const kcAfter = member.kc + kc;
  const excessAfter = member.excess + excessOf(v);
  const after = gradeFor(scoreOf(kcAfter, excessAfter));
  const nextMember: MemberRecord = {
    ...member,
    grade: after.grade,
    grade_name: after.name,
    kc: kcAfter,
    ru: member.ru + amount,
    excess: excessAfter,
  };
  const nextSession: SessionRecord = {
    month,
    units: session.units + kc,
    days: { ...session.days, [today]: unitsToday + kc },
  };
  const entry: Omit<CreditEntry, 'seq'> = {
    id: creditId,
    at: now,
    member: id,
    kind: 'credit',
    ru: amount,
    cu: null,
    stage: stage.stage,
    coin_pct: stage.pct,
    kc,
    v,
    grade: before.grade,
    grade_pct: before.pct,
    new_grade: after.grade,
    create_3x: 3 * amount,
    member_share: amount,
    ecosystem_share: amount,
    reserve_share: amount,
  };
  const parts = splitAmount(amount, c.split);
  const movement: Movement = { kind: 'credit', id: creditId, member: id, entry, categories: parts, kc };
  const at = iso(now);
  const near = K.member(id);
  const writes: Write[] = [
    { op: 'set', key: K.member(id), value: memberCodec.encode(nextMember) },
    { op: 'set', key: K.session(id, month), value: sessionCodec.encode(nextSession) },
    // the month joins the member's index with its first work
    ...(s === undefined
      ? [{ op: 'index', key: K.sessionMonths(id), member: month, score: Number(month.replace('-', '')) } as const]
      : []),
    ...pendingWrites(movement, now),
    // Peer deliveries, ids derived from the credit id so a redelivery is recognised.
    ...outboxWrites({
      id: `value:${creditId}`,
      dest: 'value',
      payload: { id: creditId, member: id, amount: toWire(amount), categories: splitWire(parts), at },
      createdAt: now,
    }, near),
    ...outboxWrites({
      id: `task-ledger:${creditId}`,
      dest: 'task-ledger',
      payload: { id: creditId, member: id, kc, v, earned_ru: toWire(amount), at },
      createdAt: now,
    }, near),
  ];
  return {
    writes,
    result: {
      amount,
      before,
      after,
      kc: kcAfter,
      ru: nextMember.ru,
      unitsToday: unitsToday + kc,
      unitsMonth: nextSession.units,
      movement,
    },
  };
}

/**
 * The /work answer (the document's fields first) and the `work` event of a credit; `seq` is the
 * ledger's number, or the placeholder of the number the credit's commit draws.
 */
export function creditWire<S extends number | Drawn>(id: string, creditId: string, stage: Stage, r: Omit<CreditOutcome, 'movement'>, seq: S) {
  const ru = toWire(r.amount);
  const result = {
    id,
    earned_ru: ru,
    new_grade: r.after.grade,
    new_total_kc: r.kc,
    create_3x: toWire(3 * r.amount),
    member_share: ru,
    ecosystem_share: ru,
    reserve_share: ru,
    grade: r.before.grade,
    new_grade_name: r.after.name,
    promoted: r.after.grade > r.before.grade,
    stage: stage.stage,
    coin_pct: stage.pct,
    ru: toWire(r.ru),
    units_today: r.unitsToday,
    units_month: r.unitsMonth,
    credit_id: creditId,
    seq,
  };
  const event = {
    type: 'work',
    id,
    earned_ru: ru,
    new_grade: result.new_grade,
    new_total_kc: result.new_total_kc,
    create_3x: result.create_3x,
    member_share: ru,
    ecosystem_share: ru,
    reserve_share: ru,
    stage: stage.stage,
    credit_id: creditId,
  };
  return { result, event };
}

export interface ExchangeInput {
  id: string;
  /** Hundredths of RU, > 0. */
  amt: number;
  now: number;
  stage: Stage;
  exchangeId: string;
}

export const exchangeKeys = (id: string): string[] => [K.member(id)];

/** An exchange draws its ledger seq. */
export const exchangeDraws = (): string[] => [K.n.entries];

/** What an exchange's update returns; its ledger seq is the number drawn. */
export interface ExchangeOutcome {
  maturityValue: number;
  member: MemberRecord;
  /** What the ledgers' update writes (planLedger). */
  movement: Movement;
}

export function planExchange(x: ExchangeInput, current: (Json | undefined)[]): UpdatePlan<ExchangeOutcome> {
  const [m] = current;
  const { id, amt, now, stage } = x;
  const member = memberCodec.decode(m);
  if (!member) throw notFound('member_not_found', `no member ${id}`);
  if (amt > member.ru) {
    throw conflict('insufficient_ru', 'the amount is above the RU balance', {
      balance: toWire(member.ru),
      requested: toWire(amt),
    });
  }
  const mv = maturityValue(amt, stage.pct);
  const nextMember: MemberRecord = { ...member, ru: member.ru - amt, cu: member.cu + amt };
  const entry: Omit<ExchangeEntry, 'seq'> = {
    id: x.exchangeId,
    at: now,
    member: id,
    kind: 'exchange',
    ru: amt,
    cu: amt,
    stage: stage.stage,
    coin_pct: stage.pct,
    maturity_value: mv,
  };
  const movement: Movement = { kind: 'exchange', id: x.exchangeId, member: id, entry };
  const writes: Write[] = [{ op: 'set', key: K.member(id), value: memberCodec.encode(nextMember) }, ...pendingWrites(movement, now)];
  return { writes, result: { maturityValue: mv, member: nextMember, movement } };
}
