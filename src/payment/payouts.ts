import { Cron } from 'croner';
import { randomUUID } from 'node:crypto';
import { AppError } from '../errors.js';
import type { Json, Store, Write } from '../store/port.js';
import { Idempotency as Idem } from '../idempotency.js';
import { availableOf, balanceOf, K, ledgerOp, ledgerUpdate, resolveKeys, readAccount, transferKeys, userAccount, type TransferInput } from './ledger.js';
import type { LedgerOp } from './ledger-batch.js';
import type { IdemTicket } from '../idempotency.js';
import { PNL } from './lifecycle.js';
import { leases } from './reconcile.js';
import { RK, chainEventWrites, receiptWrites } from './receipts.js';
import { lastPayableWeek, payoutAt, payoutUnits, split, utcDay, weekStart } from './rules.js';
import { PK, auditWrite, challengeRecords, type ChallengeRecord, type Effect, type PaymentService } from './service.js';

/**
 * The weekly payout (docs/payment.md "Payouts"). Every Sunday 00:00 UTC (croner) each funded user of
 * the week is paid: realized P&L (USD) x scale ratio x discipline coefficient x the challenge's peg,
 * rounded down, from escrow; 90 % to the trader / 10 % to platform operating for a scaled-up (funded)
 * account, 80 / 20 for a passed challenge still in the challenge engine (no collateral posted).
 *
 * Exactly once per (week, user): the transfer ids and the payout record derive from them and the
 * record is checked in the same store.update that posts, so a rerun (a second process, a crash in the
 * middle, a catch-up) posts nothing new. A store lease keeps two processes from running one week at
 * once; at start the missed weeks (at most `catchUpWeeks`) are run.
 *
 * Holds (a pending transfer per share, resolved at most once by an operator): a rule violation in the
 * 7 days before the run (and a warning), the circuit breaker (a UTC day's payouts above 5 % of
 * capital = escrow), and the pool floor (escrow must stay above 2 x the payouts being made).
 */

export const PAYOUT = {
  record: (week: string, user: string) => `pay:payout:${week}:${user}`,
  run: (week: string) => `pay:payoutrun:${week}`,
  lease: (week: string) => `pay:payoutlease:${week}`,
  last: 'pay:payout:lastweek',
  day: (day: string) => `pay:daypaid:${day}`,
  review: (id: string) => `pay:review:${id}`,
  reviewsOpen: 'pay:reviews:open',
  reviewsAll: 'pay:reviews',
  warnings: 'pay:warnings',
  /** The week's pool verdict, decided once at its first payout (a user's request or the run). */
  pool: (week: string) => `pay:payoutpool:${week}`,
};

/**
 * The pool rule over a week as a whole, decided once, before any payout of the week moves, by
 * whoever asks first (a user's payout request or the weekly run) and kept: every payout of the week
 * follows it, so the answer does not depend on who asks first, and the run's report shows it.
 */
export interface WeekPool {
  week: string;
  /** Escrow available when the verdict was taken (no payout of the week had moved yet). */
  escrow_available: string;
  /** Holds pending on escrow then (earlier weeks' reviews). */
  pending: string;
  /** The week's payouts not yet decided then (every funded user's expected total). */
  sum: string;
  /** poolFactor x (sum + pending). */
  required: string;
  ok: boolean;
  held: boolean;
  decided_at: number;
  decided_by: 'request' | 'run';
}

export interface PayoutOptions {
  scalePpm: bigint;
  disciplinePpm: bigint;
  breakerPercent: bigint;
  poolFactor: bigint;
  catchUpWeeks: number;
  leaseMs: number;
  /** How long a payout hold waits for review before it is voided (default REVIEW_HOLD_MS). */
  reviewHoldMs?: number;
  /** Test hook: throw after this many users of a run (a crash between two payouts). */
  crashAfter?: number;
}

/** A payout held for review is voided (with a warning) after 7 days without a decision. */
export const REVIEW_HOLD_MS = 7 * 86_400_000;

export type PayoutStatus = 'paid' | 'review' | 'nothing' | 'rejected';

interface Expected {
  user: string;
  total: bigint;
  platform: bigint;
  trader: bigint;
  challenges: string[];
}

/** A payout as the ledger writer applies it (JSON: it may be handed to another process). */
interface PayoutArgs {
  week: string;
  user: string;
  exp: { total: string; platform: string; trader: string; challenges: string[] };
  now: number;
  recentViolation: boolean;
  runHold?: string;
  ticket?: IdemTicket;
  /** The asking service's rules (so whichever process applies it applies the asker's). */
  rules: { breakerPercent: string; poolFactor: string; reviewHoldMs: number };
}

/** How many users' payouts the weekly run submits at once (one batch of the ledger, or a few). */
const RUN_CHUNK = 64;

const DAY = 86_400_000;
/** How often open reviews are checked against their deadline. */
const EXPIRY_SWEEP_MS = 60_000;

export class PayoutService {
  private cron: Cron | undefined;
  private expiry: NodeJS.Timeout | undefined;

  constructor(
    private readonly svc: PaymentService,
    private readonly store: Store,
    private readonly opts: PayoutOptions,
  ) {
    svc.ledger.register('payment.payout', (a) => this.payoutOp(a as unknown as PayoutArgs));
  }

  /** What a user earns for a week (not yet paid). */
  async expected(week: string, user: string): Promise<Expected> {
    const ids = (await this.store.indexRange(PK.userChallenges(user))).map((e) => e.member);
    const recs = challengeRecords.decodeMany(await this.store.getMany(ids.map((id) => PK.challenge(id))));
    let platform = 0n;
    let trader = 0n;
    const challenges: string[] = [];
    for (const c of recs) {
      if (!c || (c.state !== 'passed' && c.state !== 'funded' && c.state !== 'withdrawn')) continue;
      const cents = ((await this.store.get(PNL(c.id, week))) as number | undefined) ?? 0;
      const units = payoutUnits(cents, this.opts.scalePpm, this.opts.disciplinePpm, BigInt(c.peg.peg_ppm));
      if (units <= 0n) continue;
      const s = split(units, c.state === 'passed' ? 20n : 10n);
      platform += s.platform;
      trader += s.trader;
      challenges.push(c.id);
    }
    return { user, total: platform + trader, platform, trader, challenges };
  }

  /**
   * The week's pool verdict: the kept one, or (at the week's first payout) taken now over every funded
   * user's payout of the week not yet decided, against escrow available and the holds pending, and
   * kept unless another process kept one first (then that one is the answer).
   */
  async weekPool(week: string, by: 'request' | 'run', expected?: Expected[]): Promise<WeekPool> {
    const kept = (await this.store.get(PAYOUT.pool(week))) as WeekPool | undefined;
    if (kept) return kept;
    const exp = expected ?? (await Promise.all((await this.fundedUsers()).map((u) => this.expected(week, u))));
    // a payout already decided (before verdicts were kept) is in escrow's balance or its pending holds:
    // counted there, never in the sum as well
    const decided = await this.store.getMany(exp.map((x) => PAYOUT.record(week, x.user)));
    const sum = exp.reduce((acc, x, i) => (decided[i] ? acc : acc + x.total), 0n);
    const escrow = await readAccount(this.store, 'escrow');
    const required = this.opts.poolFactor * (sum + escrow.debits_pending);
    const held = availableOf(escrow) < required;
    const verdict: WeekPool = {
      week, escrow_available: availableOf(escrow).toString(), pending: escrow.debits_pending.toString(), sum: sum.toString(),
      required: required.toString(), ok: !held, held, decided_at: this.svc.now(), decided_by: by,
    };
    return this.store.update([PAYOUT.pool(week)], ([cur]) => {
      if (cur) return { writes: [], result: cur as unknown as WeekPool };
      return { writes: [{ op: 'set', key: PAYOUT.pool(week), value: verdict as unknown as Json }], result: verdict };
    });
  }

  private async fundedUsers(): Promise<string[]> {
    const funded = await this.store.indexRange(PK.funded);
    const recs = challengeRecords.decodeMany(await this.store.getMany(funded.map((e) => PK.challenge(e.member))));
    return [...new Set(recs.filter(Boolean).map((c) => c!.user))].sort();
  }

  /**
   * Pays (or holds) one user's week, exactly once. `runHold` (the run's, from the week's verdict)
   * holds it for review; without it the week's kept verdict decides, taken now if this is the week's
   * first payout.
   */
  async payout(week: string, user: string, e: Effect = {}, exp?: Expected, runHold?: string): Promise<Json> {
    const at = payoutAt(week);
    if (at > this.svc.now()) throw new AppError('invalid', 'week_not_finished', `the payout of ${week} is due ${new Date(at).toISOString()}`);
    if (runHold === undefined && !(await this.store.get(PAYOUT.record(week, user)))) {
      runHold = (await this.weekPool(week, 'request')).held ? 'pool_floor_run' : undefined;
    }
    const x = exp ?? (await this.expected(week, user));
    const now = this.svc.now();
    const args: PayoutArgs = {
      week, user, now, recentViolation: await this.recentViolation(user, now),
      rules: { breakerPercent: this.opts.breakerPercent.toString(), poolFactor: this.opts.poolFactor.toString(), reviewHoldMs: this.opts.reviewHoldMs ?? REVIEW_HOLD_MS },
      exp: { total: x.total.toString(), platform: x.platform.toString(), trader: x.trader.toString(), challenges: x.challenges },
      ...(runHold !== undefined ? { runHold } : {}), ...(e.ticket ? { ticket: e.ticket } : {}),
    };
    const out = (await this.svc.ledger.exec('payment.payout', args as unknown as Json)) as { body: Json; warned: boolean };
    this.svc.kick();
    if (out.warned) {
      await this.svc.warn({ user, week, reason: 'violation_last_7_days' });
    }
    return out.body;
  }

  /** One user's payout of a week as a ledger step: exactly once (its record), held or paid with its receipt. */
  private payoutOp(a: PayoutArgs): LedgerOp<Json> {
    const { week, user, now, recentViolation, runHold } = a;
    const breakerPercent = BigInt(a.rules.breakerPercent);
    const poolFactor = BigInt(a.rules.poolFactor);
    const x = { total: BigInt(a.exp.total), platform: BigInt(a.exp.platform), trader: BigInt(a.exp.trader), challenges: a.exp.challenges };
    const e: Effect = a.ticket ? { ticket: a.ticket } : {};
    const wallet = userAccount(user, 'wallet');
    const ids = { trader: `payout:${week}:${user}:trader`, platform: `payout:${week}:${user}:platform` };
    const dayKey = PAYOUT.day(utcDay(now));
    const keys = [
      ...transferKeys([{ id: ids.trader, debit: 'escrow', credit: wallet, amount: 1n, code: '' }, { id: ids.platform, debit: 'escrow', credit: 'operating', amount: 1n, code: '' }]),
      PAYOUT.record(week, user), dayKey, RK.head, ...(e.ticket ? [e.ticket.storeKey] : []),
    ];
    return ledgerOp<Json>(() => now, keys, (tx, get) => {
      // warned: this step (not a replay) raised the warning
      const done = (body: Json, warned = false) => ({ body, warned }) as unknown as Json;
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: done(replay.body) };
      const prior = get(PAYOUT.record(week, user));
      const finish = (body: Json, w: Write[] = [], warned = false) => ({
        writes: [...w, ...(e.ticket ? this.svc.finishWrites(e, { status: 200, body }) : [])],
        result: done(body, warned),
      });
      if (prior) return finish(prior);
      const base = { week, user, amount: x.total.toString(), trader: x.trader.toString(), platform: x.platform.toString(), challenges: x.challenges, ts: now };
      if (x.total === 0n) {
        const body = { ...base, status: 'nothing', receipt_hash: null };
        return finish(body, [{ op: 'set', key: PAYOUT.record(week, user), value: body }]);
      }
      const escrow = tx.account('escrow');
      const paidToday = BigInt((get(dayKey) as string | undefined) ?? '0');
      const capital = balanceOf(escrow) + paidToday;
      let reason: string | undefined;
      if (recentViolation) reason = 'violation_last_7_days';
      else if (runHold) reason = runHold;
      else if ((paidToday + x.total) * 100n > capital * breakerPercent) reason = 'circuit_breaker';
      else if (availableOf(escrow) < poolFactor * (x.total + escrow.debits_pending)) reason = 'pool_floor';
      const pending = reason !== undefined;
      const moves: TransferInput[] = [
        { id: ids.trader, debit: 'escrow', credit: wallet, amount: x.trader, code: 'payout', pending, meta: { week } },
        ...(x.platform > 0n ? [{ id: ids.platform, debit: 'escrow', credit: 'operating', amount: x.platform, code: 'payout_platform', pending, meta: { week } }] : []),
      ];
      if (availableOf(escrow) < x.total) {
        const body = { ...base, status: 'rejected', reason: 'escrow_insufficient', receipt_hash: null };
        return finish(body, [{ op: 'set', key: PAYOUT.record(week, user), value: body }]);
      }
      for (const m of moves) tx.transfer(m);
      const w: Write[] = [];
      let body: Json;
      let warned = false;
      if (pending) {
        const rid = `rv_${week}_${user}`;
        const review = { id: rid, week, user, reason: reason!, amount: x.total.toString(), holds: moves.map((m) => m.id), state: 'open', created_at: now, expires_at: now + a.rules.reviewHoldMs };
        body = { ...base, status: 'review', reason: reason!, review: rid, receipt_hash: null };
        w.push({ op: 'set', key: PAYOUT.review(rid), value: review }, { op: 'index', key: PAYOUT.reviewsOpen, member: rid, score: now }, { op: 'index', key: PAYOUT.reviewsAll, member: rid, score: now });
        if (reason === 'violation_last_7_days') {
          w.push({ op: 'push', key: PAYOUT.warnings, value: { user, week, reason, ts: now }, cap: 1000 });
          warned = true;
        }
      } else {
        const r = receiptWrites(get(RK.head), { kind: 'payout', user, amount: x.total.toString(), transfers: moves.map((m) => m.id), ref: `${week}:${user}`, ts: now });
        body = { ...base, status: 'paid', receipt_hash: r.hash };
        w.push(...r.writes, { op: 'set', key: dayKey, value: (paidToday + x.total).toString(), ttlMs: 3 * DAY });
        w.push(...chainEventWrites(`payout:${week}:${user}`, 'payout', { week, user, amount: x.total.toString(), receipt_hash: r.hash }, now));
      }
      w.push({ op: 'set', key: PAYOUT.record(week, user), value: body });
      return finish(body, w, warned);
    });
  }

  private async recentViolation(user: string, now: number): Promise<boolean> {
    const ids = (await this.store.indexRange(PK.userChallenges(user))).map((e) => e.member);
    const recs = challengeRecords.decodeMany(await this.store.getMany(ids.map((id) => PK.challenge(id))));
    return recs.some((c) => c && (c.state === 'funded' || c.state === 'passed') && c.violations.some((v) => v.ts > now - 7 * DAY && v.ts <= now));
  }

  /** Runs one week for every funded user, under a lease; returns the run's report. */
  async runWeek(week: string, onPayout?: (user: string, status: string) => void): Promise<Json> {
    weekStart(week);
    const token = randomUUID();
    const now = this.svc.now();
    const got = await this.store.update([PAYOUT.lease(week)], ([cur]) => {
      const c = leases.decode(cur);
      if (c && c.until > now) return { writes: [], result: false };
      return { writes: [{ op: 'set', key: PAYOUT.lease(week), value: leases.encode({ token, until: now + this.opts.leaseMs }) }], result: true };
    });
    if (!got) return { week, status: 'busy' };
    try {
      const users = await this.fundedUsers();
      const expected = await Promise.all(users.map((u) => this.expected(week, u)));
      const sum = expected.reduce((s, x) => s + x.total, 0n);
      const counts: Record<string, number> = {};
      // the pool rule over the week as a whole: when paying all of it would leave escrow below
      // poolFactor x (the week's payouts + the holds already pending), every payout of it is held. It
      // is the week's kept verdict, taken by this run or by a user's request that came first, so a
      // payout already decided is counted once (in escrow), and the report agrees with the outcomes
      const pool = await this.weekPool(week, 'run', expected);
      const runHold = pool.held ? 'pool_floor_run' : undefined;
      // the users' payouts go to the ledger a chunk at a time, all of a chunk at once: they land in a
      // batch (one commit), each applied over the ones before it, so the day's circuit-breaker total
      // and the pool floor see every payout of the batch before them, as one by one
      let n = 0;
      while (n < expected.length) {
        if (this.opts.crashAfter !== undefined && n >= this.opts.crashAfter) throw new Error(`injected crash after ${n} payouts`);
        const size = this.opts.crashAfter !== undefined ? Math.min(RUN_CHUNK, this.opts.crashAfter - n) : RUN_CHUNK;
        const chunk = expected.slice(n, n + size);
        const answers = await Promise.all(chunk.map((x) => this.payout(week, x.user, {}, x, runHold) as Promise<{ status: string; review?: string }>));
        answers.forEach((r, i) => {
          // a held payout an operator approved before the run reads paid in its record: it counts as approved
          const outcome = r.status === 'paid' && r.review ? 'approved' : r.status;
          counts[outcome] = (counts[outcome] ?? 0) + 1;
          onPayout?.(chunk[i]!.user, r.status);
        });
        n += chunk.length;
      }
      const report = {
        week, status: 'done', ran_at: this.svc.now(), users: users.length, expected_total: sum.toString(),
        pool: { escrow_available: pool.escrow_available, pending: pool.pending, sum: pool.sum, required: pool.required, ok: pool.ok, held: pool.held, decided_at: pool.decided_at, decided_by: pool.decided_by },
        outcomes: counts,
      };
      await this.store.update([PAYOUT.run(week), PAYOUT.last], ([, last]) => ({
        writes: [
          { op: 'set', key: PAYOUT.run(week), value: report },
          ...(typeof last !== 'string' || weekStart(last) < weekStart(week) ? [{ op: 'set' as const, key: PAYOUT.last, value: week }] : []),
        ],
        result: undefined,
      }));
      return report;
    } finally {
      await this.store.update([PAYOUT.lease(week)], ([cur]) => ({
        writes: leases.decode(cur)?.token === token ? [{ op: 'del', key: PAYOUT.lease(week) }] : [],
        result: undefined,
      }));
    }
  }

  /** Every week due and not yet run (the missed ones first, at most catchUpWeeks). */
  async runDue(): Promise<Json[]> {
    const latest = lastPayableWeek(this.svc.now());
    const weeks: string[] = [];
    for (let i = 0; i < this.opts.catchUpWeeks; i++) weeks.unshift(lastPayableWeek(payoutAt(latest) - i * 7 * DAY));
    const last = (await this.store.get(PAYOUT.last)) as string | undefined;
    const out: Json[] = [];
    for (const w of weeks) {
      if (last && weekStart(w) <= weekStart(last)) continue;
      if (await this.store.get(PAYOUT.run(w))) continue;
      out.push(await this.runWeek(w));
    }
    return out;
  }

  start(onError: (err: unknown) => void): void {
    this.cron = new Cron('0 0 * * 0', { timezone: 'UTC', protect: true }, () => {
      this.runDue().catch(onError);
    });
    this.runDue().catch(onError);
    // holds that passed their deadline while the hub was down are voided at start, not a period later
    this.expireReviews().catch(onError);
    this.expiry = setInterval(() => this.expireReviews().catch(onError), EXPIRY_SWEEP_MS);
    this.expiry.unref();
  }

  stop(): void {
    this.cron?.stop();
    if (this.expiry) clearInterval(this.expiry);
  }

  async report(week: string): Promise<Json> {
    weekStart(week);
    const r = await this.store.get(PAYOUT.run(week));
    if (!r) throw new AppError('not_found', 'run_not_found', `the payout of ${week} has not run`);
    return r;
  }

  /** Warnings raised by held payouts (a rule violation in the last 7 days), newest first. */
  async warnings() {
    return { warnings: (await this.store.range(PAYOUT.warnings, -200)).reverse() };
  }

  // ---- manual review -----------------------------------------------------------------------------

  /** Voids every open review past its deadline (a warning each); run by the payout schedule. */
  async expireReviews(): Promise<string[]> {
    const now = this.svc.now();
    const open = await this.store.indexRange(PAYOUT.reviewsOpen, { limit: 1000 });
    const recs = (await this.store.getMany(open.map((e) => PAYOUT.review(e.member)))) as ({ id: string; expires_at?: number } | undefined)[];
    const out: string[] = [];
    for (const r of recs) {
      if (!r || r.expires_at === undefined || r.expires_at > now) continue;
      try {
        const res = (await this.decide(r.id, 'reject', 'hold-deadline', 'no decision before the hold deadline', {}, true)) as { state: string };
        if (res.state === 'expired') out.push(r.id);
      } catch (err) {
        if (!(err instanceof AppError)) throw err; // decided meanwhile
      }
    }
    if (out.length) await this.svc.warn({ reason: 'review_expired', reviews: out });
    return out;
  }

  async reviews(open: boolean) {
    const ids = await this.store.indexRange(open ? PAYOUT.reviewsOpen : PAYOUT.reviewsAll, { reverse: true, limit: 200 });
    return { reviews: (await this.store.getMany(ids.map((e) => PAYOUT.review(e.member)))).filter(Boolean) };
  }

  /** Approve (post the holds) or reject (void them): at most once. */
  async decide(id: string, action: 'approve' | 'reject', reviewer: string, reason: string, e: Effect = {}, expired = false): Promise<Json> {
    const rv = (await this.store.get(PAYOUT.review(id))) as { holds: string[]; user: string; week: string; amount: string } | undefined;
    if (!rv) throw new AppError('not_found', 'review_not_found', `no review ${id}`);
    const wallet = userAccount(rv.user, 'wallet');
    const resolveId = (h: string) => `${h}:${action === 'approve' ? 'post' : 'void'}`;
    const now = this.svc.now();
    const dayKey = PAYOUT.day(utcDay(now));
    const state = action === 'approve' ? 'approved' : expired ? 'expired' : 'rejected';
    const keys = [
      ...rv.holds.flatMap((h) => resolveKeys(h, resolveId(h))),
      K.account('escrow'), K.account(wallet), K.account('operating'),
      PAYOUT.review(id), PAYOUT.record(rv.week, rv.user), RK.head, dayKey, ...(e.ticket ? [e.ticket.storeKey] : []),
    ];
    let warned = false; // set when this call (not a replay) raised the warning
    const out = await ledgerUpdate(this.store, () => now, keys, (tx, get) => {
      warned = false;
      const replay = e.ticket && Idem.done(get(e.ticket.storeKey));
      if (replay) return { result: replay.body };
      const cur = get(PAYOUT.review(id)) as { state: string; expires_at?: number } & Record<string, Json>;
      if (cur.state !== 'open') throw new AppError('conflict', 'review_closed', `review ${id} was already ${cur.state}`);
      if (expired && (cur.expires_at === undefined || cur.expires_at > now)) return { result: { review: id, state: 'open', receipt_hash: null } as Json };
      // a hold waits at most its deadline: past it, only the sweep resolves it (a void, with a warning)
      if (!expired && cur.expires_at !== undefined && cur.expires_at <= now) {
        throw new AppError('conflict', 'review_expired', `review ${id} passed its deadline (${new Date(cur.expires_at).toISOString()}); its hold is voided`);
      }
      for (const h of rv.holds) tx.resolve({ id: resolveId(h), pending_id: h, action: action === 'approve' ? 'post' : 'void' });
      const w: Write[] = [
        { op: 'set', key: PAYOUT.review(id), value: { ...cur, state, reviewer, reason, decided_at: now } },
        { op: 'unindex', key: PAYOUT.reviewsOpen, member: id },
        auditWrite({ action: expired ? 'review_expired' : `review_${action}`, review: id, by: reviewer, reason, ts: now }),
      ];
      if (expired) w.push({ op: 'push', key: PAYOUT.warnings, value: { user: rv.user, week: rv.week, reason: 'review_expired', review: id, ts: now }, cap: 1000 });
      if (action === 'approve') {
        // an approved review is paid today: it counts toward the day's circuit-breaker total
        const paidToday = BigInt((get(dayKey) as string | undefined) ?? '0');
        w.push({ op: 'set', key: dayKey, value: (paidToday + BigInt(rv.amount)).toString(), ttlMs: 3 * DAY });
      }
      let receipt_hash: string | null = null;
      if (action === 'approve') {
        const r = receiptWrites(get(RK.head), { kind: 'payout', user: rv.user, amount: rv.amount, transfers: rv.holds.map(resolveId), ref: `${rv.week}:${rv.user}`, ts: now });
        receipt_hash = r.hash;
        w.push(...r.writes, ...chainEventWrites(`payout:${rv.week}:${rv.user}`, 'payout', { week: rv.week, user: rv.user, amount: rv.amount, receipt_hash: r.hash }, now));
      }
      const rec = get(PAYOUT.record(rv.week, rv.user)) as Record<string, Json>;
      w.push({ op: 'set', key: PAYOUT.record(rv.week, rv.user), value: { ...rec, status: action === 'approve' ? 'paid' : expired ? 'expired' : 'rejected', receipt_hash } });
      const body = { review: id, state, receipt_hash };
      if (e.ticket) w.push(...this.svc.finishWrites(e, { status: 200, body }));
      return { writes: w, result: body as Json };
    });
    this.svc.kick();
    return out;
  }
}
