import { AppError } from '../errors.js';
import type { Clock } from '../clock.js';
import type { Json, Store, Write } from '../store/port.js';
import { Idempotency as Idem } from '../idempotency.js';
import { K, availableOf, balanceOf, collateralAccount, ledgerUpdate, parseTransfer, transferKeys, userAccount, type LedgerTx, type TransferInput } from './ledger.js';
import { RK, chainEventWrites, receiptWrites } from './receipts.js';
import { bookingWeek, collateralFor, evaluateRules, learningCredit, mulDivDown, payoutWeekOf, utcDay, type ChallengeRules } from './rules.js';
import { PK, auditWrite, challengeRecords, insufficient, type ChallengeRecord, type Effect, type PaymentService } from './service.js';

/**
 * The challenge engine (docs/payment.md "Challenge lifecycle"): active -> failed | passed;
 * passed -> funded (collateral posted: scale-up) -> withdrawn. Fills and rule violations come from
 * the challenge's trading program (bound in src/app.ts) or from an operator; an operator can also
 * judge a challenge by hand (audited).
 *
 * - fail: the violation is recorded (and on the chain), learning credit = entry fee x 0.3 (rounded
 *   down) moves from escrow to the user's learning credit;
 * - pass: recorded on the chain; the account is funded, its realized P&L from fills is what the
 *   weekly payout pays;
 * - scale-up: collateral = account size x 3 % x peg, rounded up, from the wallet to the challenge's
 *   own sub-account of the collateral pool (`collateral_pool:{challenge}`); a funded account's
 *   repeated violations (a second one within 30 days) deduct `violationDeductPercent` of that
 *   collateral to escrow, in the violation's own update; withdrawal refunds what the sub-account holds.
 */

export const PNL = (challenge: string, week: string) => `pay:pnl:${challenge}:${week}`;
const FILL = (challenge: string, eventId: string) => `pay:fill:${challenge}:${eventId}`;
const DAY = 86_400_000;

export interface LifecycleOptions {
  rules: ChallengeRules;
  violationDeductPercent: bigint;
}

export type EngineEvent =
  | { type: 'fill'; event_id: string; realized_cents: number; ts: number }
  | { type: 'violation'; event_id: string; rule: string; ts: number };

export class ChallengeLifecycle {
  constructor(
    private readonly svc: PaymentService,
    private readonly store: Store,
    private readonly opts: LifecycleOptions,
  ) {}

  /** The same engine over the same store whose service's clock is `clock` (the demo's past steps), with `opts` for its rules. */
  at(clock: Clock, opts: LifecycleOptions = this.opts): ChallengeLifecycle {
    return new ChallengeLifecycle(this.svc.withClock(clock), this.store, opts);
  }

  /**
   * A fill or a violation from the challenge's program (idempotent per event id). A violation of a
   * funded challenge and the collateral deduction it causes land in ONE update (the deduction's
   * transfer id is the event's), so concurrent violations each deduct and a crash loses neither.
   */
  async event(challengeId: string, ev: EngineEvent): Promise<{ applied: boolean; state: string; outcome?: string }> {
    await this.svc.challenge(challengeId); // 404 for an unknown challenge
    const now = this.svc.now();
    const week = bookingWeek(ev.ts, now);
    const col = await this.collateralHolder(challengeId);
    const deductId = `deduct:${challengeId}:${ev.event_id}`;
    const keys = [PK.challenge(challengeId), FILL(challengeId, ev.event_id), PNL(challengeId, week), RK.head, ...transferKeys([{ id: deductId, debit: col, credit: 'escrow', amount: 1n, code: '' }])];
    const res = await ledgerUpdate(this.store, () => now, keys, (tx, get) => {
      const c = challengeRecords.decode(get(PK.challenge(challengeId)))!;
      if (get(FILL(challengeId, ev.event_id))) return { result: { applied: false, state: c.state, outcome: undefined as string | undefined } };
      const writes: Write[] = [{ op: 'set', key: FILL(challengeId, ev.event_id), value: 1, ttlMs: 30 * DAY }];
      const next: ChallengeRecord = { ...c, stats: { ...c.stats }, violations: [...c.violations] };
      let outcome: string | undefined;
      if (ev.type === 'fill') {
        if (!Number.isSafeInteger(ev.realized_cents)) throw new AppError('invalid', 'invalid_amount', 'realized_cents must be an integer');
        const day = utcDay(ev.ts);
        next.stats.realized_cents += ev.realized_cents;
        next.stats.peak_cents = Math.max(next.stats.peak_cents, next.stats.realized_cents);
        next.stats.day_cents = (next.stats.day === day ? next.stats.day_cents : 0) + ev.realized_cents;
        next.stats.day = day;
        if (c.state === 'passed' || c.state === 'funded') {
          writes.push({ op: 'set', key: PNL(challengeId, week), value: ((get(PNL(challengeId, week)) as number | undefined) ?? 0) + ev.realized_cents });
        }
        if (c.state === 'active') {
          const r = evaluateRules(next.stats, c.account_size, this.opts.rules);
          if (r) outcome = r.outcome === 'pass' ? 'pass' : `fail:${r.rule}`;
        }
        const fill: { [k: string]: Json } = { challenge: challengeId, realized_cents: ev.realized_cents, ts: ev.ts };
        if (week !== payoutWeekOf(ev.ts)) Object.assign(fill, { late: true, booked_week: week });
        writes.push(...chainEventWrites(`fill:${challengeId}:${ev.event_id}`, 'trade_fill', fill, now));
      } else {
        next.violations = [...next.violations, { rule: ev.rule, ts: ev.ts }].slice(-50);
        writes.push(...chainEventWrites(`violation:${challengeId}:${ev.event_id}`, 'risk_violation', { challenge: challengeId, rule: ev.rule, ts: ev.ts }, now));
        if (c.state === 'active') outcome = `fail:${ev.rule}`;
        if (c.state === 'funded') writes.push(...this.deduct(tx, get, next, col, ev.ts, deductId, now));
      }
      writes.push({ op: 'set', key: PK.challenge(challengeId), value: challengeRecords.encode(next) });
      return { writes, result: { applied: true, state: next.state, outcome } };
    });
    if (res.outcome === 'pass') await this.judge(challengeId, 'pass', 'engine', 'profit target reached');
    else if (res.outcome?.startsWith('fail:')) await this.judge(challengeId, 'fail', 'engine', res.outcome.slice(5));
    if (res.applied) this.svc.kick();
    return { ...res, state: (await this.svc.challenge(challengeId)).state };
  }

  /**
   * A funded account's repeated violation (a second one within 30 days, this one counted) deducts
   * `violationDeductPercent` of the challenge's posted collateral (rounded down) from its collateral
   * sub-account to escrow, at most what the sub-account still holds. Runs inside the violation's update.
   */
  private deduct(tx: LedgerTx, get: (k: string) => Json | undefined, c: ChallengeRecord, col: string, ts: number, id: string, now: number): Write[] {
    const recent = c.violations.filter((v) => v.ts > ts - 30 * DAY && v.ts <= ts);
    if (recent.length < 2) return [];
    const amount = mulDivDown(BigInt(c.collateral), this.opts.violationDeductPercent, 100n);
    const have = balanceOf(tx.account(col));
    const take = amount < have ? amount : have;
    if (take <= 0n) return [];
    tx.transfer({ id, debit: col, credit: 'escrow', amount: take, code: 'collateral_deduction', meta: { challenge: c.id } });
    const r = receiptWrites(get(RK.head), { kind: 'collateral_deduction', user: c.user, amount: take.toString(), transfers: [id], ref: c.id, ts: now });
    return r.writes;
  }

  /**
   * The account a challenge's collateral was posted to: its own sub-account of the collateral pool,
   * or, for a challenge funded before collateral was kept per challenge, the user's former collateral
   * account (which it keeps: the books are never rewritten). Read before the update that uses it:
   * the posting transfer never changes.
   */
  private async collateralHolder(challengeId: string): Promise<string> {
    const posting = parseTransfer(await this.store.get(K.transfer(`collateral:${challengeId}`)));
    return posting?.credit ?? collateralAccount(challengeId);
  }

  /** Pass or fail an active challenge (by the engine's rules or an operator, audited). */
  async judge(challengeId: string, outcome: 'pass' | 'fail', by: string, reason: string, e: Effect = {}) {
    const c0 = await this.svc.challenge(challengeId);
    const credit = userAccount(c0.user, 'credit');
    const refund: TransferInput = { id: `credit:${challengeId}`, debit: 'escrow', credit, amount: learningCredit(BigInt(c0.entry_fee)), code: 'learning_credit' };
    const now = this.svc.now();
    const keys = [...transferKeys([refund]), PK.challenge(challengeId), PK.userKind(c0.user, c0.kind), RK.head, ...(e.ticket ? [e.ticket.storeKey] : [])];
    return ledgerUpdate(this.store, () => now, keys, (tx, get) => {
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body as Json };
      const c = challengeRecords.decode(get(PK.challenge(challengeId)))!;
      if (c.state !== 'active') throw new AppError('conflict', 'challenge_not_active', `challenge ${challengeId} is ${c.state}`);
      const next: ChallengeRecord = { ...c, state: outcome === 'pass' ? 'passed' : 'failed', judged: { outcome, by, reason, ts: now } };
      const writes: Write[] = [
        { op: 'set', key: PK.challenge(challengeId), value: challengeRecords.encode(next) },
        { op: 'set', key: PK.userKind(c.user, c.kind), value: { id: c.id, state: next.state } },
        auditWrite({ action: 'judge', challenge: challengeId, outcome, by, reason, ts: now }),
      ];
      let receipt_hash: string | null = null;
      if (outcome === 'pass') {
        writes.push({ op: 'index', key: PK.funded, member: challengeId, score: now });
        writes.push(...chainEventWrites(`pass:${challengeId}`, 'challenge_pass', { challenge: challengeId, by, ts: now }, now));
      } else if (refund.amount > 0n) {
        tx.transfer(refund);
        const r = receiptWrites(get(RK.head), { kind: 'learning_credit', user: c.user, amount: refund.amount.toString(), transfers: [refund.id], ref: challengeId, ts: now });
        receipt_hash = r.hash;
        writes.push(...r.writes);
        writes.push(...chainEventWrites(`violation:${challengeId}:judged`, 'risk_violation', { challenge: challengeId, rule: reason, ts: now }, now));
      }
      const body = { challenge: challengeId, state: next.state, learning_credit: outcome === 'fail' ? refund.amount.toString() : '0', receipt_hash };
      if (e.ticket) writes.push(...this.svc.finishWrites(e, { status: 200, body }));
      return { writes, result: body as Json };
    });
  }

  /** Scale-up of a passed challenge: the collateral moves from the wallet to the collateral pool. */
  async scaleUp(user: string, challengeId: string, e: Effect) {
    const c0 = await this.svc.challenge(challengeId);
    if (c0.user !== user) throw new AppError('not_found', 'challenge_not_found', `no challenge ${challengeId}`);
    const amount = collateralFor(c0.account_size, BigInt(c0.peg.peg_ppm));
    const wallet = userAccount(user, 'wallet');
    const t: TransferInput = { id: `collateral:${challengeId}`, debit: wallet, credit: collateralAccount(challengeId), amount, code: 'collateral', meta: { challenge: challengeId } };
    const now = this.svc.now();
    return ledgerUpdate(this.store, () => now, [...transferKeys([t]), PK.challenge(challengeId), RK.head, ...(e.ticket ? [e.ticket.storeKey] : [])], (tx, get) => {
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body as Json };
      const c = challengeRecords.decode(get(PK.challenge(challengeId)))!;
      if (c.state !== 'passed') throw new AppError('conflict', 'challenge_not_passed', `challenge ${challengeId} is ${c.state}; only a passed challenge scales up`);
      if (availableOf(tx.account(wallet)) < amount) throw insufficient(amount - availableOf(tx.account(wallet)));
      tx.transfer(t);
      const r = receiptWrites(get(RK.head), { kind: 'collateral', user, amount: amount.toString(), transfers: [t.id], ref: challengeId, ts: now });
      const body = { challenge: challengeId, state: 'funded', collateral: amount.toString(), receipt_hash: r.hash };
      return {
        writes: [
          ...r.writes,
          { op: 'set', key: PK.challenge(challengeId), value: challengeRecords.encode({ ...c, state: 'funded', collateral: amount.toString() }) },
          ...(e.ticket ? this.svc.finishWrites(e, { status: 200, body }) : []),
        ],
        result: body as Json,
      };
    });
  }

  /** Withdrawal from the program: the remaining collateral returns to the wallet. */
  async withdraw(user: string, challengeId: string, e: Effect) {
    const c0 = await this.svc.challenge(challengeId);
    if (c0.user !== user) throw new AppError('not_found', 'challenge_not_found', `no challenge ${challengeId}`);
    const col = await this.collateralHolder(challengeId);
    const legacy = col !== collateralAccount(challengeId);
    const wallet = userAccount(user, 'wallet');
    const id = `refund:${challengeId}`;
    const now = this.svc.now();
    return ledgerUpdate(this.store, () => now, [...transferKeys([{ id, debit: col, credit: wallet, amount: 1n, code: '' }]), PK.challenge(challengeId), RK.head, ...(e.ticket ? [e.ticket.storeKey] : [])], (tx, get) => {
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body as Json };
      const c = challengeRecords.decode(get(PK.challenge(challengeId)))!;
      if (c.state !== 'funded') throw new AppError('conflict', 'challenge_not_funded', `challenge ${challengeId} is ${c.state}`);
      // exactly what this challenge's collateral still holds (its posting less its own deductions);
      // from the former shared account, the challenge's figure at most (what the former rule refunded)
      const held = availableOf(tx.account(col));
      const refund = legacy && BigInt(c.collateral) < held ? BigInt(c.collateral) : held;
      const writes: Write[] = [
        { op: 'set', key: PK.challenge(challengeId), value: challengeRecords.encode({ ...c, state: 'withdrawn', refunded: refund.toString() }) },
        { op: 'unindex', key: PK.funded, member: challengeId },
      ];
      let receipt_hash: string | null = null;
      if (refund > 0n) {
        tx.transfer({ id, debit: col, credit: wallet, amount: refund, code: 'collateral_refund', meta: { challenge: challengeId } });
        const r = receiptWrites(get(RK.head), { kind: 'collateral_refund', user, amount: refund.toString(), transfers: [id], ref: challengeId, ts: now });
        receipt_hash = r.hash;
        writes.push(...r.writes);
      }
      const body = { challenge: challengeId, state: 'withdrawn', refunded: refund.toString(), receipt_hash };
      if (e.ticket) writes.push(...this.svc.finishWrites(e, { status: 200, body }));
      return { writes, result: body as Json };
    });
  }
}
