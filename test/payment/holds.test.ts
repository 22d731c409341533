import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { checkLedger } from '../../src/payment/check.js';
import { K, availableOf, balanceOf, parseAccount } from '../../src/payment/ledger.js';
import { PAYOUT, REVIEW_HOLD_MS } from '../../src/payment/payouts.js';
import { payoutAt, payoutUnits, payoutWeekOf, split } from '../../src/payment/rules.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { deposit, passedChallenge, relay, wallet } from './support.js';

const HOUR = 3_600_000;
const W = payoutWeekOf(Date.parse('2026-11-18T12:00:00Z'));
const PEG = 1_350_000_000;
const CENTS = 40_000;
const X = payoutUnits(CENTS, 1_000_000n, 900_000n, BigInt(PEG)); // one user's payout (80/20 split inside)

describe('payout holds: deadlines, the day total, the pool rule per run', () => {
  const open: { store: Store; dir: string }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.store.close();
      rmSync(o.dir, { recursive: true, force: true });
    }
  });
  async function world(users: string[], escrow: bigint, violators: string[] = []) {
    const dir = tempDir('holds');
    const store = await openLmdbStore({ path: dir });
    open.push({ store, dir });
    const clock = new ManualClock(payoutAt(W) - 2 * 86_400_000);
    await deposit(store, clock.now(), 'fund-escrow', 'escrow', escrow);
    const { life } = relay(store, clock);
    for (const u of users) {
      await passedChallenge(store, u, `c_${u}`, 'starter_10k', 10_000, PEG);
      await life.event(`c_${u}`, { type: 'fill', event_id: 'f', realized_cents: CENTS, ts: clock.now() });
      if (violators.includes(u)) await life.event(`c_${u}`, { type: 'violation', event_id: 'v', rule: 'daily_loss', ts: clock.now() });
    }
    clock.set(payoutAt(W) + HOUR);
    const acct = async (a: string) => parseAccount(a, await store.get(K.account(a)));
    return { store, clock, acct };
  }

  it('a held payout not decided by its deadline is voided with a warning; hold and void are in the history', async () => {
    const { store, clock, acct } = await world(['h1'], 10n ** 18n, ['h1']);
    const { pay, svc } = relay(store, clock);
    const held = (await pay.payout(W, 'h1')) as { status: string; review: string };
    expect(held).toMatchObject({ status: 'review', reason: 'violation_last_7_days' });
    const rv = (await store.get(PAYOUT.review(held.review))) as { expires_at: number; created_at: number };
    expect(rv.expires_at - rv.created_at).toBe(REVIEW_HOLD_MS);
    expect(availableOf(await acct('escrow'))).toBe(10n ** 18n - X);

    clock.set(rv.expires_at - 1);
    expect(await pay.expireReviews()).toEqual([]);
    clock.set(rv.expires_at);
    expect(await pay.expireReviews()).toEqual([held.review]);
    expect(await pay.expireReviews()).toEqual([]);
    expect(await store.get(PAYOUT.review(held.review))).toMatchObject({ state: 'expired', reviewer: 'hold-deadline' });
    expect((await pay.warnings()).warnings[0]).toMatchObject({ user: 'h1', reason: 'review_expired', review: held.review });
    expect(balanceOf(await acct('escrow'))).toBe(10n ** 18n);
    expect(availableOf(await acct('escrow'))).toBe(10n ** 18n);
    expect(balanceOf(await acct(wallet('h1')))).toBe(0n);
    await expect(pay.decide(held.review, 'approve', 'ops', 'late')).rejects.toMatchObject({ code: 'review_closed' });
    const hist = (await svc.wallet('h1', { limit: 20, offset: 0 })).history as { id: string; status: string }[];
    expect(hist.map((t) => [t.id, t.status])).toEqual([
      [`payout:${W}:h1:trader:void`, 'void'],
      [`payout:${W}:h1:trader`, 'pending'],
    ]);
    expect(await pay.payout(W, 'h1')).toMatchObject({ status: 'expired' });
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });

  it('a hold past its deadline is no longer decided, even before the sweep voids it', async () => {
    const { store, clock, acct } = await world(['d1', 'd2'], 10n ** 18n, ['d1', 'd2']);
    const { pay } = relay(store, clock);
    const a = (await pay.payout(W, 'd1')) as { review: string };
    const b = (await pay.payout(W, 'd2')) as { review: string };
    // past the deadline, the sweep not yet run (it runs every minute; a process may have been down)
    clock.advance(REVIEW_HOLD_MS);
    await expect(pay.decide(a.review, 'approve', 'ops', 'late')).rejects.toMatchObject({ code: 'review_expired', status: 409 });
    await expect(pay.decide(b.review, 'reject', 'ops', 'late')).rejects.toMatchObject({ code: 'review_expired', status: 409 });
    // nothing moved: the holds still reserve the payouts, nothing reached the wallets
    expect(availableOf(await acct('escrow'))).toBe(10n ** 18n - 2n * X);
    expect(balanceOf(await acct(wallet('d1')))).toBe(0n);
    expect(await store.get(PAYOUT.review(a.review))).toMatchObject({ state: 'open' });
    // the sweep voids both, once, with a warning each, and the funds return
    expect((await pay.expireReviews()).sort()).toEqual([a.review, b.review].sort());
    expect(availableOf(await acct('escrow'))).toBe(10n ** 18n);
    expect((await pay.warnings()).warnings.filter((w) => (w as { reason: string }).reason === 'review_expired')).toHaveLength(2);
    expect(await pay.payout(W, 'd1')).toMatchObject({ status: 'expired' });
    expect(await checkLedger(store)).toMatchObject({ ok: true });
  });

  it('an approved review counts toward the day\'s circuit-breaker total', async () => {
    // capital 30 X: one payout (X) is within 5 %, an approved one plus another (2 X) is not
    const { store, clock } = await world(['a1', 'a2'], 30n * X, ['a1']);
    const { pay } = relay(store, clock);
    const held = (await pay.payout(W, 'a1')) as { review: string };
    await pay.decide(held.review, 'approve', 'ops', 'checked');
    expect(await store.get(PAYOUT.day(new Date(clock.now()).toISOString().slice(0, 10)))).toBe(X.toString());
    expect(await pay.payout(W, 'a2')).toMatchObject({ status: 'review', reason: 'circuit_breaker' });
  });

  it('the pool rule over a whole run: a run that would leave escrow below 2 x its payouts is held as a whole', async () => {
    // escrow 5 X, three payouts of X: each alone keeps 2 X, the run as a whole needs 6 X
    const { store, clock, acct } = await world(['p1', 'p2', 'p3'], 5n * X);
    const { pay } = relay(store, clock, { breakerPercent: 100n });
    const report = (await pay.runWeek(W)) as { pool: { ok: boolean; held: boolean; required: string }; outcomes: Record<string, number> };
    expect(report.pool).toMatchObject({ ok: false, held: true, required: (6n * X).toString() });
    expect(report.outcomes).toEqual({ review: 3 });
    const reviews = (await pay.reviews(true)).reviews as { reason: string }[];
    expect(reviews.map((r) => r.reason)).toEqual(['pool_floor_run', 'pool_floor_run', 'pool_floor_run']);
    expect(balanceOf(await acct('escrow'))).toBe(5n * X);

    // with enough in the pool the run pays
    const ok = await world(['q1', 'q2', 'q3'], 6n * X);
    const r2 = (await relay(ok.store, ok.clock, { breakerPercent: 100n }).pay.runWeek(W)) as { pool: { ok: boolean }; outcomes: Record<string, number> };
    expect(r2).toMatchObject({ pool: { ok: true }, outcomes: { paid: 3 } });
    expect(split(X, 20n).trader).toBeGreaterThan(0n);
  });

  /** Each user's payout status (and hold reason) for week W. */
  const outcomes = async (store: Store, users: string[]) =>
    Promise.all(users.map(async (u) => {
      const r = (await store.get(PAYOUT.record(W, u))) as { status: string; reason?: string };
      return `${u}:${r.status}${r.reason ? `:${r.reason}` : ''}`;
    }));
  type Report = { pool: { held: boolean; ok: boolean; required: string; escrow_available: string }; outcomes: Record<string, number> };
  /** A report whose pool is held has no payout of the week paid. */
  const agrees = (r: Report) => expect(r.pool.held ? (r.outcomes.paid ?? 0) : 0).toBe(0);

  it('the pool rule gives the same answer whether the users ask first or the run does; the report agrees with its outcomes', async () => {
    // escrow 5 X, three payouts of X: each alone keeps 2 X, the week as a whole needs 6 X
    const users = ['p1', 'p2', 'p3'];
    const runFirst = await world(users, 5n * X);
    const r1 = (await relay(runFirst.store, runFirst.clock, { breakerPercent: 100n }).pay.runWeek(W)) as Report;
    const usersFirst = await world(users, 5n * X);
    const { pay } = relay(usersFirst.store, usersFirst.clock, { breakerPercent: 100n });
    // the users' own requests come 4 s before the catch-up run
    for (const u of users) expect(await pay.payout(W, u)).toMatchObject({ status: 'review', reason: 'pool_floor_run' });
    usersFirst.clock.advance(4_000);
    const r2 = (await pay.runWeek(W)) as Report;
    expect(await outcomes(usersFirst.store, users)).toEqual(await outcomes(runFirst.store, users));
    expect(await outcomes(runFirst.store, users)).toEqual(users.map((u) => `${u}:review:pool_floor_run`));
    expect(r2.outcomes).toEqual(r1.outcomes);
    expect(r2.pool).toMatchObject({ held: true, ok: false, required: (6n * X).toString(), escrow_available: (5n * X).toString() });
    expect(r1.pool).toMatchObject({ held: true, required: (6n * X).toString() });
    agrees(r1);
    agrees(r2);
    expect(balanceOf(await usersFirst.acct('escrow'))).toBe(5n * X);
  });

  it('a hold of the week is counted once: in escrow\'s pending, not again in the week\'s total', async () => {
    // escrow 7 X, three payouts of X, v1's held for a violation: the week needs 2 x 3 X = 6 X; counting
    // v1's hold twice (3 X + X pending) would need 8 X and hold everyone
    const users = ['v1', 'v2', 'v3'];
    const runFirst = await world(users, 7n * X, ['v1']);
    const r1 = (await relay(runFirst.store, runFirst.clock, { breakerPercent: 100n }).pay.runWeek(W)) as Report;
    const usersFirst = await world(users, 7n * X, ['v1']);
    const { pay } = relay(usersFirst.store, usersFirst.clock, { breakerPercent: 100n });
    expect(await pay.payout(W, 'v1')).toMatchObject({ status: 'review', reason: 'violation_last_7_days' });
    usersFirst.clock.advance(4_000);
    const r2 = (await pay.runWeek(W)) as Report;
    const want = ['v1:review:violation_last_7_days', 'v2:paid', 'v3:paid'];
    expect(await outcomes(runFirst.store, users)).toEqual(want);
    expect(await outcomes(usersFirst.store, users)).toEqual(want);
    expect(r1.outcomes).toEqual({ review: 1, paid: 2 });
    expect(r2.outcomes).toEqual(r1.outcomes);
    expect(r2.pool).toMatchObject({ held: false, ok: true, required: (6n * X).toString() });
    agrees(r1);
    agrees(r2);
    expect(await checkLedger(usersFirst.store)).toMatchObject({ ok: true });
  });
});
