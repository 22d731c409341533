import { afterAll, describe, expect, it, vi } from 'vitest';
import { outboxKey, outboxPartition } from '../../src/outbox.js';
import { LEDGER_NEAR } from '../../src/payment/receipts.js';
import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { K, ledgerUpdate, readAccount, transferKeys, userAccount, availableOf, balanceOf } from '../../src/payment/ledger.js';
import { ChallengeLifecycle, PNL } from '../../src/payment/lifecycle.js';
import { PegService } from '../../src/payment/peg.js';
import { RK, verifyReceiptChain } from '../../src/payment/receipts.js';
import { DEFAULT_RULES, payoutAt, payoutUnits, payoutWeekOf, split } from '../../src/payment/rules.js';
import { PaymentService, PK } from '../../src/payment/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';
import { recordingStore } from '../support/recording-store.js';
import { flatPriceSource } from '../support/payment.js';

// The weekly payout (src/payment/payouts.ts; docs/payment.md "Payouts"): realized P&L x scale x
// discipline x peg, 80/20 for a passed challenge and 90/10 for a funded one; exactly once per
// (week, user); held for review on a rule violation in the last 7 days, above 5 % of capital a day
// (circuit breaker) and below 2 x the payouts (pool floor); refused when escrow cannot pay; holds
// approved, rejected or expired after their deadline, once. Prices come from in-process sources.
const load = () => import('../../src/payment/payouts.js');

const T0 = Date.parse('2026-11-18T12:00:00Z'); // a Wednesday
const WEEK = payoutWeekOf(T0);
const DAY = 86_400_000;
const SCALE = 1_000_000n;
const DISCIPLINE = 900_000n;
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

const source = (name: string) => flatPriceSource(name);

type Opts = Partial<{ breakerPercent: bigint; poolFactor: bigint; catchUpWeeks: number; reviewHoldMs: number; crashAfter: number; scalePpm: bigint; disciplinePpm: bigint; noHooks: boolean }>;

async function world(opts: Opts = {}) {
  const { PayoutService } = await load();
  const raw = await openLmdbStore({ path: tempDir('payouts-rules') });
  stores.push(raw);
  const { store, writes } = recordingStore(raw);
  const clock = new ManualClock(T0);
  const published: { channel: string; msg: unknown }[] = [];
  let kicks = 0;
  const peg = new PegService([source('p0'), source('p1'), source('p2')], { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
  const svc = new PaymentService({
    store,
    clock,
    peg,
    idempotency: new Idempotency(store, clock),
    maxOnrampKrw: 1e7,
    // without a bus and a kick hook when asked (both are optional)
    ...(opts.noHooks
      ? {}
      : { bus: { publish: async (channel: string, msg: unknown) => void published.push({ channel, msg }) } as never, onKick: () => void kicks++ }),
  });
  const life = new ChallengeLifecycle(svc, store, { rules: DEFAULT_RULES, violationDeductPercent: 10n });
  const { noHooks: _n, ...payoutOpts } = opts;
  const pay = new PayoutService(svc, store, { scalePpm: SCALE, disciplinePpm: DISCIPLINE, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 4, leaseMs: 60_000, ...payoutOpts });
  const fund = (id: string, credit: string, amount: bigint) =>
    ledgerUpdate(store, () => clock.now(), transferKeys([{ id, debit: 'bank', credit, amount, code: 'test' }]), (tx) => (tx.transfer({ id, debit: 'bank', credit, amount, code: 'test' }), { result: undefined }));
  /** A passed challenge of `user` with `cents` realized in WEEK. */
  const passed = async (user: string, cents: number) => {
    await fund(`fund-${user}`, userAccount(user, 'wallet'), 1000n * 10n ** 6n);
    const c = ((await svc.buy(user, 'starter_10k', {})) as { challenge: string }).challenge;
    await life.event(c, { type: 'fill', event_id: 'pass', realized_cents: 100_000, ts: clock.now() });
    await store.set(PNL(c, WEEK), cents);
    return c;
  };
  const pegOf = async (c: string) => BigInt(((await store.get(PK.challenge(c))) as { peg: { peg_ppm: number } }).peg.peg_ppm);
  const owed = async (c: string, cents: number, platformPercent = 20n) => split(payoutUnits(cents, SCALE, DISCIPLINE, await pegOf(c)), platformPercent);
  /** Tops escrow up (or not) so that it holds exactly `units`. */
  const escrowTo = async (units: bigint) => {
    const e = await readAccount(store, 'escrow');
    const have = balanceOf(e);
    if (units > have) await fund(`top-${units}`, 'escrow', units - have);
    else if (units < have) {
      const id = `drain-${units}`;
      await ledgerUpdate(store, () => clock.now(), transferKeys([{ id, debit: 'escrow', credit: 'bank', amount: have - units, code: 'test' }]), (tx) => (tx.transfer({ id, debit: 'escrow', credit: 'bank', amount: have - units, code: 'test' }), { result: undefined }));
    }
  };
  const due = () => clock.set(payoutAt(WEEK) + 60_000);
  return { store, raw, clock, svc, life, pay, fund, passed, owed, escrowTo, due, writes, published, kicks: () => kicks };
}

describe('the constants and keys', () => {
  it('hold a review 7 days and name the records', async () => {
    const { REVIEW_HOLD_MS, PAYOUT } = await load();
    expect(REVIEW_HOLD_MS).toBe(7 * DAY);
    expect([PAYOUT.record('W', 'u'), PAYOUT.run('W'), PAYOUT.lease('W'), PAYOUT.last, PAYOUT.day('D'), PAYOUT.review('r'), PAYOUT.reviewsOpen, PAYOUT.reviewsAll, PAYOUT.warnings]).toEqual([
      'pay:payout:W:u', 'pay:payoutrun:W', 'pay:payoutlease:W', 'pay:payout:lastweek', 'pay:daypaid:D', 'pay:review:r', 'pay:reviews:open', 'pay:reviews', 'pay:warnings',
    ]);
  });
});

describe('expected', () => {
  it('is P&L x scale x discipline x peg, 20 % to the platform for a passed challenge, 10 % for a funded one', async () => {
    const w = await world();
    const c = await w.passed('u1', 25_000);
    const s = await w.owed(c, 25_000);
    expect(s.platform * 5n).toBeLessThanOrEqual(s.platform + s.trader);
    expect(await w.pay.expected(WEEK, 'u1')).toEqual({ user: 'u1', total: s.platform + s.trader, platform: s.platform, trader: s.trader, challenges: [c] });
    const rec = (await w.store.get(PK.challenge(c))) as Record<string, Json>;
    for (const state of ['funded', 'withdrawn']) {
      await w.store.set(PK.challenge(c), { ...rec, state });
      const f = await w.owed(c, 25_000, 10n);
      expect(await w.pay.expected(WEEK, 'u1'), state).toMatchObject({ platform: f.platform, trader: f.trader, challenges: [c] });
    }
    for (const state of ['active', 'failed']) {
      await w.store.set(PK.challenge(c), { ...rec, state });
      expect(await w.pay.expected(WEEK, 'u1'), state).toEqual({ user: 'u1', total: 0n, platform: 0n, trader: 0n, challenges: [] });
    }
  });

  it('leaves out a week without profit and a challenge without P&L', async () => {
    const w = await world();
    const c = await w.passed('u1', -500);
    expect((await w.pay.expected(WEEK, 'u1')).challenges).toEqual([]);
    await w.store.set(PNL(c, WEEK), 0);
    expect((await w.pay.expected(WEEK, 'u1')).total).toBe(0n);
    expect((await w.pay.expected('2026-W40', 'u1')).total).toBe(0n);
    expect(await w.pay.expected(WEEK, 'nobody')).toEqual({ user: 'nobody', total: 0n, platform: 0n, trader: 0n, challenges: [] });
  });
});

describe('payout', () => {
  it('is refused before the week is due (Sunday 00:00 UTC), taken from then on', async () => {
    const w = await world();
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.clock.set(payoutAt(WEEK) - 1);
    expect(await refusal(w.pay.payout(WEEK, 'u1'))).toEqual({ status: 400, code: 'week_not_finished', message: `the payout of ${WEEK} is due ${new Date(payoutAt(WEEK)).toISOString()}` });
    w.clock.set(payoutAt(WEEK));
    expect(((await w.pay.payout(WEEK, 'u1')) as { status: string }).status).toBe('paid');
  });

  it('pays from escrow with a receipt, counts the day, and answers the same record again', async () => {
    const w = await world();
    const c = await w.passed('u1', 25_000);
    const s = await w.owed(c, 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const now = w.clock.now();
    const wallet0 = (await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted;
    const op0 = (await readAccount(w.store, 'operating')).credits_posted;
    w.writes.length = 0;
    const kicks0 = w.kicks();
    const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    expect(body).toEqual({
      week: WEEK, user: 'u1', amount: (s.platform + s.trader).toString(), trader: s.trader.toString(), platform: s.platform.toString(), challenges: [c], ts: now,
      status: 'paid', receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(w.kicks()).toBe(kicks0 + 1);
    expect((await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted - wallet0).toBe(s.trader);
    expect((await readAccount(w.store, 'operating')).credits_posted - op0).toBe(s.platform);
    const day = new Date(now).toISOString().slice(0, 10);
    expect(w.writes).toContainEqual({ op: 'set', key: `pay:daypaid:${day}`, value: (s.platform + s.trader).toString(), ttlMs: 3 * DAY });
    expect(w.writes).toContainEqual({ op: 'set', key: `pay:payout:${WEEK}:u1`, value: body });
    // the chain event of the payout, queued with it
    expect(w.writes).toContainEqual(expect.objectContaining({ op: 'set', key: outboxKey(`payout:${WEEK}:u1`, outboxPartition(LEDGER_NEAR)) }));
    expect(await w.store.get(`pay:daypaid:${day}`)).toBe((s.platform + s.trader).toString());
    expect((await verifyReceiptChain(w.store)).ok).toBe(true);
    // again: the same answer, nothing moves
    w.clock.advance(1000);
    expect(await w.pay.payout(WEEK, 'u1')).toEqual(body);
    expect((await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted - wallet0).toBe(s.trader);
    const log = (await w.store.indexRange(K.log)).map((e) => e.member);
    expect(log.filter((m) => m === `payout:${WEEK}:u1:trader`)).toHaveLength(1);
    expect(log.filter((m) => m === `payout:${WEEK}:u1:platform`)).toHaveLength(1);
  });

  it('records nothing to pay for a week without profit', async () => {
    const w = await world();
    await w.passed('u1', 0);
    w.due();
    const body = await w.pay.payout(WEEK, 'u1');
    expect(body).toEqual({ week: WEEK, user: 'u1', amount: '0', trader: '0', platform: '0', challenges: [], ts: w.clock.now(), status: 'nothing', receipt_hash: null });
    expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toEqual(body);
  });

  it('holds a payout above 5 % of the day capital: exactly 5 % is paid', async () => {
    for (const [extra, status] of [[0n, 'paid'], [-1n, 'review']] as const) {
      const w = await world({ poolFactor: 0n });
      const c = await w.passed('u1', 25_000);
      const s = await w.owed(c, 25_000);
      const total = s.platform + s.trader;
      await w.escrowTo(20n * total + extra);
      w.due();
      const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
      expect(body.status, String(extra)).toBe(status);
      if (status === 'review') expect(body).toMatchObject({ reason: 'circuit_breaker', review: `rv_${WEEK}_u1`, receipt_hash: null });
    }
  });

  it('counts what the day already paid toward the breaker', async () => {
    const w = await world({ poolFactor: 0n });
    const c1 = await w.passed('u1', 25_000);
    await w.passed('u2', 25_000);
    const s = await w.owed(c1, 25_000);
    const total = s.platform + s.trader;
    // capital = escrow now + paid today: 40 x total lets the first (total) and the second (2 x total = 5 %) through
    await w.escrowTo(40n * total);
    w.due();
    expect(((await w.pay.payout(WEEK, 'u1')) as { status: string }).status).toBe('paid');
    expect(((await w.pay.payout(WEEK, 'u2')) as { status: string }).status).toBe('paid');
    const w2 = await world({ poolFactor: 0n });
    await w2.passed('u1', 25_000);
    await w2.passed('u2', 25_000);
    await w2.escrowTo(40n * total - 1n);
    w2.due();
    expect(((await w2.pay.payout(WEEK, 'u1')) as { status: string }).status).toBe('paid');
    expect(await w2.pay.payout(WEEK, 'u2')).toMatchObject({ status: 'review', reason: 'circuit_breaker' });
  });

  it('holds a payout that would leave escrow under 2 x the payouts (pool floor): exactly 2 x is paid', async () => {
    for (const [extra, status] of [[0n, 'paid'], [-1n, 'review']] as const) {
      const w = await world({ breakerPercent: 100n });
      const c = await w.passed('u1', 25_000);
      const s = await w.owed(c, 25_000);
      await w.escrowTo(2n * (s.platform + s.trader) + extra);
      w.due();
      const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
      expect(body.status, String(extra)).toBe(status);
      // one user is the whole week: the week's verdict (taken by this first request) holds it
      if (status === 'review') expect(body.reason).toBe('pool_floor_run');
    }
  });

  it('refuses a payout escrow cannot cover', async () => {
    for (const [extra, status] of [[0n, 'paid'], [-1n, 'rejected']] as const) {
      const w = await world({ breakerPercent: 100n, poolFactor: 0n });
      const c = await w.passed('u1', 25_000);
      const s = await w.owed(c, 25_000);
      await w.escrowTo(s.platform + s.trader + extra);
      w.due();
      const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
      expect(body.status, String(extra)).toBe(status);
      if (status === 'rejected') {
        expect(body).toMatchObject({ reason: 'escrow_insufficient', receipt_hash: null });
        expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toEqual(body);
      }
    }
  });

  it('holds a payout after a rule violation in the 7 days before it, with a warning', async () => {
    const w = await world();
    const c = await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const now = w.clock.now();
    const rec = (await w.store.get(PK.challenge(c))) as Record<string, Json>;
    // exactly 7 days ago and in the future: not recent
    await w.store.set(PK.challenge(c), { ...rec, violations: [{ rule: 'daily_loss', ts: now - 7 * DAY }, { rule: 'daily_loss', ts: now + 1 }] });
    expect(((await w.pay.payout(WEEK, 'u1')) as { status: string }).status).toBe('paid');
    const w2 = await world();
    const c2 = await w2.passed('u1', 25_000);
    await w2.fund('escrow-big', 'escrow', 10n ** 15n);
    w2.due();
    const rec2 = (await w2.store.get(PK.challenge(c2))) as Record<string, Json>;
    await w2.store.set(PK.challenge(c2), { ...rec2, violations: [{ rule: 'daily_loss', ts: now - 7 * DAY + 1 }] });
    const body = (await w2.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    expect(body).toMatchObject({ status: 'review', reason: 'violation_last_7_days', review: `rv_${WEEK}_u1` });
    expect((await w2.pay.warnings()).warnings).toEqual([{ user: 'u1', week: WEEK, reason: 'violation_last_7_days', ts: now }]);
    expect(w2.published).toEqual([{ channel: 'payment:warnings', msg: { user: 'u1', week: WEEK, reason: 'violation_last_7_days' } }]);
    const rv = (await w2.pay.reviews(true)).reviews as Record<string, Json>[];
    expect(rv).toEqual([{ id: `rv_${WEEK}_u1`, week: WEEK, user: 'u1', reason: 'violation_last_7_days', amount: body.amount, holds: [`payout:${WEEK}:u1:trader`, `payout:${WEEK}:u1:platform`], state: 'open', created_at: now, expires_at: now + 7 * DAY }]);
    // a replay raises no second warning
    await w2.pay.payout(WEEK, 'u1');
    expect(w2.published).toHaveLength(1);
    // a violation at this very moment counts; of a funded challenge too; a failed challenge's does not
    for (const [state, other, status] of [['passed', 'active', 'review'], ['funded', 'active', 'review'], ['failed', 'passed', 'paid'], ['active', 'passed', 'paid']] as const) {
      const w3 = await world();
      const c3 = await w3.passed('u1', 25_000);
      const second = ((await w3.svc.buy('u1', 'starter_10k', {})) as { challenge: string }).challenge;
      await w3.fund('escrow-big', 'escrow', 10n ** 15n);
      w3.due();
      const t = w3.clock.now();
      const r3 = (await w3.store.get(PK.challenge(c3))) as Record<string, Json>;
      const r4 = (await w3.store.get(PK.challenge(second))) as Record<string, Json>;
      await w3.store.set(PK.challenge(second), { ...r4, state, violations: [{ rule: 'daily_loss', ts: t }] });
      await w3.store.set(PK.challenge(c3), { ...r3, state: other === 'active' ? 'passed' : other, violations: [] });
      expect(((await w3.pay.payout(WEEK, 'u1')) as { status: string }).status, state).toBe(status);
    }
  });

  it('replays an answer through the Idempotency-Key', async () => {
    const w = await world();
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const idem = new Idempotency(w.store, w.clock);
    const t = await idem.begin('ops', 'k1', 'fp');
    const ticket = (t as { ticket: { storeKey: string; fingerprint: string; token: string } }).ticket;
    const body = await w.pay.payout(WEEK, 'u1', { ticket });
    expect(await idem.begin('ops', 'k1', 'fp')).toEqual({ replay: { status: 200, body } });
    expect(await w.pay.payout(WEEK, 'u1', { ticket })).toEqual(body);
  });
});

describe('runWeek and runDue', () => {
  it('runs every funded user once under a lease and reports it', async () => {
    const w = await world();
    await w.passed('u2', 25_000);
    await w.passed('u1', 30_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const seen: string[] = [];
    const report = (await w.pay.runWeek(WEEK, (u, s) => seen.push(`${u}:${s}`))) as Record<string, Json>;
    expect(seen).toEqual(['u1:paid', 'u2:paid']);
    expect(report).toMatchObject({ week: WEEK, status: 'done', ran_at: w.clock.now(), users: 2, outcomes: { paid: 2 }, pool: { ok: true, held: false } });
    expect(await w.pay.report(WEEK)).toEqual(report);
    expect(await w.store.get('pay:payout:lastweek')).toBe(WEEK);
    expect(await w.store.get(`pay:payoutlease:${WEEK}`)).toBeUndefined();
    // a lease held by another run: busy
    await w.store.set(`pay:payoutlease:${WEEK}`, { token: 'other', until: w.clock.now() + 1 });
    expect(await w.pay.runWeek(WEEK)).toEqual({ week: WEEK, status: 'busy' });
    expect(await w.store.get(`pay:payoutlease:${WEEK}`)).toEqual({ token: 'other', until: w.clock.now() + 1 });
    await w.store.set(`pay:payoutlease:${WEEK}`, { token: 'other', until: w.clock.now() });
    expect(((await w.pay.runWeek(WEEK)) as { status: string }).status).toBe('done');
    // an older week does not move the last week back
    await w.pay.runWeek('2026-W40');
    expect(await w.store.get('pay:payout:lastweek')).toBe(WEEK);
    expect(await refusal(w.pay.report('2026-W41'))).toEqual({ status: 404, code: 'run_not_found', message: 'the payout of 2026-W41 has not run' });
    expect((await refusal(w.pay.report('2026-53'))).code).toBe('invalid_week');
    expect((await refusal(w.pay.runWeek('nope'))).code).toBe('invalid_week');
  });

  it('holds the whole run when paying it would leave escrow under 2 x (the run + the pending holds)', async () => {
    const w = await world({ breakerPercent: 100n });
    const c = await w.passed('u1', 25_000);
    await w.passed('u2', 25_000);
    const s = await w.owed(c, 25_000);
    const each = s.platform + s.trader;
    await w.escrowTo(4n * each - 1n);
    w.due();
    const report = (await w.pay.runWeek(WEEK)) as Record<string, Json>;
    expect(report).toMatchObject({ outcomes: { review: 2 }, expected_total: (2n * each).toString(), pool: { escrow_available: (4n * each - 1n).toString(), required: (4n * each).toString(), ok: false, held: true } });
    expect(((await w.pay.reviews(true)).reviews as { reason: string }[]).map((r) => r.reason)).toEqual(['pool_floor_run', 'pool_floor_run']);
    const ok = await world({ breakerPercent: 100n });
    await ok.passed('u1', 25_000);
    await ok.passed('u2', 25_000);
    await ok.escrowTo(4n * each);
    ok.due();
    expect(await ok.pay.runWeek(WEEK)).toMatchObject({ outcomes: { paid: 2 }, pool: { ok: true, held: false } });
  });

  it('stops a run that crashes and leaves the lease to run out; a rerun pays the rest once', async () => {
    const w = await world({ crashAfter: 1 });
    await w.passed('u1', 25_000);
    await w.passed('u2', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    await expect(w.pay.runWeek(WEEK)).rejects.toThrow('injected crash after 1 payouts');
    expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toMatchObject({ status: 'paid' });
    expect(await w.store.get(`pay:payout:${WEEK}:u2`)).toBeUndefined();
    expect(await w.store.get(`pay:payoutlease:${WEEK}`)).toBeUndefined();
  });

  it('runs the missed weeks, oldest first, at most catchUpWeeks, skipping those already run', async () => {
    const w = await world({ catchUpWeeks: 2 });
    w.due();
    const out = (await w.pay.runDue()) as { week: string }[];
    const prev = payoutWeekOf(payoutAt(WEEK) - 8 * DAY);
    expect(out.map((r) => r.week)).toEqual([prev, WEEK]);
    expect(await w.pay.runDue()).toEqual([]);
    // a week after the last one run, not run yet
    w.clock.advance(7 * DAY);
    const next = payoutWeekOf(payoutAt(WEEK) + DAY);
    expect(((await w.pay.runDue()) as { week: string }[]).map((r) => r.week)).toEqual([next]);
    expect(await w.store.get('pay:payout:lastweek')).toBe(next);
    const w4 = await world({ catchUpWeeks: 3 });
    w4.due();
    const prev2 = payoutWeekOf(payoutAt(WEEK) - 15 * DAY);
    expect(((await w4.pay.runDue()) as { week: string }[]).map((r) => r.week)).toEqual([prev2, prev, WEEK]);
    // a week not run but before the last: skipped
    const w2 = await world({ catchUpWeeks: 3 });
    w2.due();
    await w2.store.set('pay:payout:lastweek', WEEK);
    expect(await w2.pay.runDue()).toEqual([]);
    const w3 = await world({ catchUpWeeks: 2 });
    w3.due();
    await w3.store.set(`pay:payoutrun:${prev}`, { week: prev });
    expect(((await w3.pay.runDue()) as { week: string }[]).map((r) => r.week)).toEqual([WEEK]);
  });

  it('starts by running what is due and stops its schedule', async () => {
    const w = await world({ catchUpWeeks: 1 });
    w.due();
    const errors: unknown[] = [];
    w.pay.start((e) => errors.push(e));
    w.pay.stop();
    await vi.waitFor(async () => expect(await w.store.get(`pay:payoutrun:${WEEK}`)).toBeDefined());
    expect(errors).toEqual([]);
  });
});

describe('reviews', () => {
  async function held(opts: Opts = {}) {
    const w = await world({ breakerPercent: 1n, ...opts });
    const c = await w.passed('u1', 25_000);
    const s = await w.owed(c, 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 12n);
    w.due();
    const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    expect(body.status).toBe('review');
    return { ...w, s, id: body.review as string, total: s.platform + s.trader };
  }

  it('approve posts the holds once, with a receipt, and counts the day', async () => {
    const w = await held();
    const wallet0 = (await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted;
    w.clock.advance(3_600_000);
    const now = w.clock.now();
    w.writes.length = 0;
    const kicks0 = w.kicks();
    const r = (await w.pay.decide(w.id, 'approve', 'ops', 'checked')) as Record<string, Json>;
    expect(r).toEqual({ review: w.id, state: 'approved', receipt_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(w.kicks()).toBe(kicks0 + 1);
    const log = (await w.store.indexRange(K.log)).map((e) => e.member);
    expect(log.filter((m) => m.startsWith(`payout:${WEEK}:u1:`))).toEqual(
      expect.arrayContaining([`payout:${WEEK}:u1:trader:post`, `payout:${WEEK}:u1:platform:post`]),
    );
    expect(log.some((m) => m.endsWith(':void'))).toBe(false);
    expect((await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted - wallet0).toBe(w.s.trader);
    expect(availableOf(await readAccount(w.store, 'escrow'))).toBe(balanceOf(await readAccount(w.store, 'escrow')));
    expect(await w.store.get(`pay:daypaid:${new Date(now).toISOString().slice(0, 10)}`)).toBe(w.total.toString());
    expect(w.writes).toContainEqual({ op: 'set', key: `pay:daypaid:${new Date(now).toISOString().slice(0, 10)}`, value: w.total.toString(), ttlMs: 3 * DAY });
    expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toMatchObject({ status: 'paid', receipt_hash: r.receipt_hash });
    expect(await w.store.get(`pay:review:${w.id}`)).toMatchObject({ state: 'approved', reviewer: 'ops', reason: 'checked', decided_at: now });
    expect((await w.pay.reviews(true)).reviews).toEqual([]);
    expect((await w.pay.reviews(false)).reviews).toHaveLength(1);
    expect(await refusal(w.pay.decide(w.id, 'reject', 'ops', 'again'))).toEqual({ status: 409, code: 'review_closed', message: `review ${w.id} was already approved` });
    expect((await verifyReceiptChain(w.store)).ok).toBe(true);
    expect(await refusal(w.pay.decide('rv_none', 'approve', 'ops', 'x'))).toEqual({ status: 404, code: 'review_not_found', message: 'no review rv_none' });
  });

  it('replays a decision through the Idempotency-Key instead of answering review_closed', async () => {
    const w = await held();
    const idem = new Idempotency(w.store, w.clock);
    const ticket = ((await idem.begin('ops', 'd1', 'fp')) as { ticket: { storeKey: string; fingerprint: string; token: string } }).ticket;
    const first = await w.pay.decide(w.id, 'approve', 'ops', 'ok', { ticket });
    expect(await w.pay.decide(w.id, 'approve', 'ops', 'ok', { ticket })).toEqual(first);
    expect(await idem.begin('ops', 'd1', 'fp')).toEqual({ replay: { status: 200, body: first } });
  });

  it('reject voids the holds and pays nothing', async () => {
    const w = await held();
    const wallet0 = (await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted;
    const r = await w.pay.decide(w.id, 'reject', 'ops', 'suspicious');
    expect(r).toEqual({ review: w.id, state: 'rejected', receipt_hash: null });
    const log = (await w.store.indexRange(K.log)).map((e) => e.member);
    expect(log).toEqual(expect.arrayContaining([`payout:${WEEK}:u1:trader:void`, `payout:${WEEK}:u1:platform:void`]));
    expect(log.some((m) => m.endsWith(':post'))).toBe(false);
    expect((await readAccount(w.store, userAccount('u1', 'wallet'))).credits_posted).toBe(wallet0);
    expect((await readAccount(w.store, 'escrow')).debits_pending).toBe(0n);
    expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toMatchObject({ status: 'rejected', receipt_hash: null });
    expect((await w.pay.warnings()).warnings).toEqual([]);
  });

  it('expires an open review at its deadline with a warning, and not before', async () => {
    const w = await held({ reviewHoldMs: 3_600_000 });
    w.clock.advance(3_600_000 - 1);
    expect(await w.pay.expireReviews()).toEqual([]);
    expect(w.published).toEqual([]);
    w.clock.advance(1);
    expect(await w.pay.expireReviews()).toEqual([w.id]);
    expect(await w.store.get(`pay:review:${w.id}`)).toMatchObject({ state: 'expired', reviewer: 'hold-deadline' });
    expect(await w.store.get(`pay:payout:${WEEK}:u1`)).toMatchObject({ status: 'expired', receipt_hash: null });
    expect((await w.pay.warnings()).warnings).toEqual([{ user: 'u1', week: WEEK, reason: 'review_expired', review: w.id, ts: w.clock.now() }]);
    expect(w.published).toEqual([{ channel: 'payment:warnings', msg: { reason: 'review_expired', reviews: [w.id] } }]);
    expect((await readAccount(w.store, 'escrow')).debits_pending).toBe(0n);
    expect(await w.pay.expireReviews()).toEqual([]);
    expect(w.published).toHaveLength(1);
  });

  it('leaves reviews without a deadline open and skips an index entry without its review', async () => {
    const w = await held({ reviewHoldMs: 1000 });
    const rec = (await w.store.get(`pay:review:${w.id}`)) as Record<string, Json>;
    const { expires_at: _e, ...noDeadline } = rec;
    await w.store.set(`pay:review:${w.id}`, noDeadline);
    await w.store.index('pay:reviews:open', 'rv_gone', w.clock.now());
    w.clock.advance(10 * DAY);
    expect(await w.pay.expireReviews()).toEqual([]);
    expect((await w.pay.reviews(true)).reviews).toEqual([noDeadline]);
    // asked to expire it all the same, the decision leaves it open
    expect(await w.pay.decide(w.id, 'reject', 'hold-deadline', 'no deadline', {}, true)).toEqual({ review: w.id, state: 'open', receipt_hash: null });
    expect(await w.store.get(`pay:review:${w.id}`)).toEqual(noDeadline);
  });

  it('an expiry that finds the review not yet due leaves it open', async () => {
    const w = await held();
    const r = await w.pay.decide(w.id, 'reject', 'hold-deadline', 'early', {}, true);
    expect(r).toEqual({ review: w.id, state: 'open', receipt_hash: null });
    expect(await w.store.get(`pay:review:${w.id}`)).toMatchObject({ state: 'open' });
  });
});

describe('the lease, the platform share and pending holds', () => {
  it('a run takes the week lease for leaseMs under its own token, and leaves a lease another run took meanwhile', async () => {
    const w = await world();
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const now = w.clock.now();
    w.writes.length = 0;
    const lease = `pay:payoutlease:${WEEK}`;
    // while u1 is paid the lease runs out and another run takes it
    await w.pay.runWeek(WEEK, () => void w.raw.set(lease, { token: 'other', until: now + 1 }));
    const taken = w.writes.find((x) => x.op === 'set' && x.key === lease) as unknown as { value: { token: string; until: number } };
    expect(taken.value).toEqual({ token: expect.stringMatching(/^[0-9a-f-]{36}$/), until: now + 60_000 });
    expect(await w.store.get(lease)).toEqual({ token: 'other', until: now + 1 });
  });

  it('a payout whose platform share rounds to 0 moves the trader share alone', async () => {
    // 0.01 USD x 0.000001 x 0.3 x the peg (1,380 tokens) = 4.14 units: 4, of which 20 % rounds to 0
    const w = await world({ scalePpm: 1n, disciplinePpm: 300_000n });
    const c = await w.passed('u1', 1);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    expect(await w.pay.expected(WEEK, 'u1')).toEqual({ user: 'u1', total: 4n, platform: 0n, trader: 4n, challenges: [c] });
    const op0 = (await readAccount(w.store, 'operating')).credits_posted;
    const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    expect(body).toMatchObject({ status: 'paid', amount: '4', trader: '4', platform: '0' });
    expect((await readAccount(w.store, 'operating')).credits_posted).toBe(op0);
    const log = (await w.store.indexRange(K.log)).map((e) => e.member);
    expect(log).toContain(`payout:${WEEK}:u1:trader`);
    expect(log).not.toContain(`payout:${WEEK}:u1:platform`);
  });

  /** u1's payout held for a violation: escrow then has `each` pending. */
  async function oneHeld(w: Awaited<ReturnType<typeof world>>) {
    const c = await w.passed('u1', 25_000);
    await w.passed('u2', 25_000);
    const s = await w.owed(c, 25_000);
    const each = s.platform + s.trader;
    await w.escrowTo(100n * each);
    w.due();
    const rec = (await w.store.get(PK.challenge(c))) as Record<string, Json>;
    await w.store.set(PK.challenge(c), { ...rec, violations: [{ rule: 'daily_loss', ts: w.clock.now() - DAY }] });
    expect(await w.pay.payout(WEEK, 'u1')).toMatchObject({ status: 'review', reason: 'violation_last_7_days' });
    expect((await readAccount(w.store, 'escrow')).debits_pending).toBe(each);
    return each;
  }

  it('counts the holds already pending in the pool floor of a payout', async () => {
    for (const [extra, status] of [[0n, 'paid'], [-1n, 'review']] as const) {
      const w = await world({ breakerPercent: 100n });
      const each = await oneHeld(w);
      // available = balance - each pending; required = 2 x (each + each pending)
      await w.escrowTo(5n * each + extra);
      const body = (await w.pay.payout(WEEK, 'u2')) as Record<string, Json>;
      expect(body.status, String(extra)).toBe(status);
      if (status === 'review') expect(body.reason).toBe('pool_floor');
    }
  });

  it('counts the holds already pending in the pool floor of a run', async () => {
    for (const [extra, status] of [[0n, 'paid'], [-1n, 'review']] as const) {
      const w = await world({ breakerPercent: 100n });
      const c = await w.passed('u1', 25_000);
      await w.passed('u2', 25_000);
      const s = await w.owed(c, 25_000);
      const each = s.platform + s.trader;
      // a hold on escrow from before the week's verdict (any pending debit of escrow counts)
      const hold = { id: 'earlier-hold', debit: 'escrow', credit: 'bank', amount: each, code: 'test', pending: true };
      await w.escrowTo(100n * each);
      await ledgerUpdate(w.store, () => w.clock.now(), transferKeys([hold]), (tx) => (tx.transfer(hold), { result: undefined }));
      w.due();
      // the run's sum is both users (2 x each), plus the hold pending: required 2 x 3 x each
      await w.escrowTo(7n * each + extra);
      const report = (await w.pay.runWeek(WEEK)) as Record<string, Json>;
      expect(report.pool, String(extra)).toMatchObject({ escrow_available: (6n * each + extra).toString(), pending: each.toString(), sum: (2n * each).toString(), required: (6n * each).toString(), ok: extra === 0n, held: extra !== 0n, decided_by: 'run' });
      expect(((await w.store.get(`pay:payout:${WEEK}:u2`)) as { status: string }).status, String(extra)).toBe(status);
    }
  });
});

describe('what a payout records', () => {
  const outboxPayload = async (store: Store, id: string) => ((await store.get(outboxKey(id, outboxPartition(LEDGER_NEAR)))) as { payload: Json }).payload;

  it('its transfers are coded and dated by the week; its receipt and chain event name it', async () => {
    const w = await world();
    const c = await w.passed('u1', 25_000);
    const s = await w.owed(c, 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const body = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    const ids = [`payout:${WEEK}:u1:trader`, `payout:${WEEK}:u1:platform`];
    expect(await w.store.get(K.transfer(ids[0]!))).toMatchObject({ code: 'payout', status: 'posted', amount: s.trader.toString(), meta: { week: WEEK } });
    expect(await w.store.get(K.transfer(ids[1]!))).toMatchObject({ code: 'payout_platform', status: 'posted', amount: s.platform.toString(), meta: { week: WEEK } });
    expect(await w.store.get(RK.receipt(body.receipt_hash as string))).toMatchObject({ kind: 'payout', user: 'u1', amount: body.amount, transfers: ids, ref: `${WEEK}:u1` });
    expect(await outboxPayload(w.store, `payout:${WEEK}:u1`)).toEqual({ kind: 'payout', data: { week: WEEK, user: 'u1', amount: body.amount, receipt_hash: body.receipt_hash } });
  });

  it('an approval has its receipt of the posted holds, its chain event and an audit entry', async () => {
    const w = await world({ breakerPercent: 1n });
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 12n);
    w.due();
    const held = (await w.pay.payout(WEEK, 'u1')) as Record<string, Json>;
    const id = held.review as string;
    const r = (await w.pay.decide(id, 'approve', 'ops', 'checked')) as Record<string, Json>;
    const now = w.clock.now();
    expect(await w.store.get(RK.receipt(r.receipt_hash as string))).toMatchObject({
      kind: 'payout',
      user: 'u1',
      amount: held.amount,
      transfers: [`payout:${WEEK}:u1:trader:post`, `payout:${WEEK}:u1:platform:post`],
      ref: `${WEEK}:u1`,
    });
    expect(await outboxPayload(w.store, `payout:${WEEK}:u1`)).toEqual({ kind: 'payout', data: { week: WEEK, user: 'u1', amount: held.amount, receipt_hash: r.receipt_hash } });
    expect((await w.store.range(PK.audit, -1))[0]).toEqual({ action: 'review_approve', review: id, by: 'ops', reason: 'checked', ts: now });
  });

  it('a rejection and an expiry leave an audit entry each, and a rejection counts nothing toward the day', async () => {
    for (const expire of [false, true]) {
      const w = await world({ breakerPercent: 1n, reviewHoldMs: 1000 });
      await w.passed('u1', 25_000);
      await w.fund('escrow-big', 'escrow', 10n ** 12n);
      w.due();
      const id = ((await w.pay.payout(WEEK, 'u1')) as Record<string, Json>).review as string;
      if (expire) {
        w.clock.advance(1000);
        expect(await w.pay.expireReviews()).toEqual([id]);
      } else await w.pay.decide(id, 'reject', 'ops', 'suspicious');
      expect((await w.store.range(PK.audit, -1))[0]).toEqual(
        expire
          ? { action: 'review_expired', review: id, by: 'hold-deadline', reason: 'no decision before the hold deadline', ts: w.clock.now() }
          : { action: 'review_reject', review: id, by: 'ops', reason: 'suspicious', ts: w.clock.now() },
      );
      expect(await w.store.get(`pay:daypaid:${new Date(w.clock.now()).toISOString().slice(0, 10)}`)).toBeUndefined();
      expect((await w.store.get(K.transfer(`payout:${WEEK}:u1:trader:void`))) as Record<string, Json>).toMatchObject({ status: 'void', pending_id: `payout:${WEEK}:u1:trader` });
    }
  });
});

describe('the hold deadline of a manual decision', () => {
  it('a decision before the deadline is taken; at the deadline it is 409 review_expired and the hold stays for the sweep', async () => {
    for (const late of [false, true]) {
      const w = await world({ breakerPercent: 1n, reviewHoldMs: 3_600_000 });
      await w.passed('u1', 25_000);
      await w.fund('escrow-big', 'escrow', 10n ** 12n);
      w.due();
      const id = ((await w.pay.payout(WEEK, 'u1')) as Record<string, Json>).review as string;
      const deadline = w.clock.now() + 3_600_000;
      w.clock.set(deadline - (late ? 0 : 1));
      if (!late) {
        expect(await w.pay.decide(id, 'approve', 'ops', 'ok')).toMatchObject({ state: 'approved' });
        continue;
      }
      expect(await refusal(w.pay.decide(id, 'approve', 'ops', 'ok'))).toEqual({
        status: 409,
        code: 'review_expired',
        message: `review ${id} passed its deadline (${new Date(deadline).toISOString()}); its hold is voided`,
      });
      expect(await w.store.get(`pay:review:${id}`)).toMatchObject({ state: 'open' });
      expect(await w.pay.expireReviews()).toEqual([id]);
    }
  });
});

describe('runs, lists and replays', () => {
  it('pays the users of a run in the order of their names, whatever the order they were funded in', async () => {
    const w = await world();
    for (const u of ['u3', 'u1', 'u2']) {
      await w.passed(u, 25_000);
      w.clock.advance(60_000);
    }
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    const seen: string[] = [];
    await w.pay.runWeek(WEEK, (u) => seen.push(u));
    expect(seen).toEqual(['u1', 'u2', 'u3']);
  });

  it('passes over a funded index entry whose challenge is gone, and a lease gone before its release', async () => {
    const w = await world();
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    await w.store.index(PK.funded, 'ch_gone', w.clock.now());
    const lease = `pay:payoutlease:${WEEK}`;
    const report = (await w.pay.runWeek(WEEK, () => void w.raw.del(lease))) as Record<string, Json>;
    expect(report).toMatchObject({ status: 'done', users: 1, outcomes: { paid: 1 } });
    expect(await w.store.get(lease)).toBeUndefined();
  });

  it('lists warnings and reviews newest first', async () => {
    const w = await world();
    for (const u of ['u1', 'u2']) {
      const c = await w.passed(u, 25_000);
      const rec = (await w.store.get(PK.challenge(c))) as Record<string, Json>;
      await w.store.set(PK.challenge(c), { ...rec, violations: [{ rule: 'daily_loss', ts: payoutAt(WEEK) - DAY }] });
    }
    await w.fund('escrow-big', 'escrow', 10n ** 15n);
    w.due();
    await w.pay.payout(WEEK, 'u1');
    w.clock.advance(1000);
    await w.pay.payout(WEEK, 'u2');
    expect(((await w.pay.warnings()).warnings as { user: string }[]).map((x) => x.user)).toEqual(['u2', 'u1']);
    expect(((await w.pay.reviews(true)).reviews as { user: string }[]).map((x) => x.user)).toEqual(['u2', 'u1']);
    expect(((await w.pay.reviews(false)).reviews as { user: string }[]).map((x) => x.user)).toEqual(['u2', 'u1']);
  });

  it('an expiry sweep passes over an open index entry without its review', async () => {
    const w = await world({ breakerPercent: 1n, reviewHoldMs: 1000 });
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 12n);
    w.due();
    const id = ((await w.pay.payout(WEEK, 'u1')) as Record<string, Json>).review as string;
    await w.store.index('pay:reviews:open', 'rv_gone', w.clock.now() + 1);
    w.clock.advance(1000);
    expect(await w.pay.expireReviews()).toEqual([id]);
  });

  it('a payout retried with its Idempotency-Key answers its first answer, even after the review was decided', async () => {
    const w = await world({ breakerPercent: 1n });
    await w.passed('u1', 25_000);
    await w.fund('escrow-big', 'escrow', 10n ** 12n);
    w.due();
    const idem = new Idempotency(w.store, w.clock);
    const ticket = ((await idem.begin('ops', 'k1', 'fp')) as { ticket: { storeKey: string; fingerprint: string; token: string } }).ticket;
    const first = (await w.pay.payout(WEEK, 'u1', { ticket })) as Record<string, Json>;
    expect(first.status).toBe('review');
    await w.pay.decide(first.review as string, 'approve', 'ops', 'ok');
    expect(await w.pay.payout(WEEK, 'u1', { ticket })).toEqual(first);
    expect(await w.pay.payout(WEEK, 'u1')).toMatchObject({ status: 'paid' });
  });

  it('works without a bus and a kick hook', async () => {
    const w = await world({ noHooks: true, breakerPercent: 1n, reviewHoldMs: 1000 });
    const c = await w.passed('u1', 25_000);
    await w.passed('u2', 25_000);
    const rec = (await w.store.get(PK.challenge(c))) as Record<string, Json>;
    await w.store.set(PK.challenge(c), { ...rec, violations: [{ rule: 'daily_loss', ts: payoutAt(WEEK) - DAY }] });
    await w.fund('escrow-big', 'escrow', 10n ** 12n);
    w.due();
    expect(await w.pay.payout(WEEK, 'u1')).toMatchObject({ status: 'review', reason: 'violation_last_7_days' });
    const id2 = ((await w.pay.payout(WEEK, 'u2')) as Record<string, Json>).review as string;
    expect(await w.pay.decide(id2, 'approve', 'ops', 'ok')).toMatchObject({ state: 'approved' });
    w.clock.advance(1000);
    expect(await w.pay.expireReviews()).toEqual([`rv_${WEEK}_u1`]);
  });
});
