import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { ChallengeLifecycle } from '../../src/payment/lifecycle.js';
import { K, ledgerUpdate, readAccount, transferKeys, userAccount } from '../../src/payment/ledger.js';
import { checkLedger } from '../../src/payment/check.js';
import { PegService } from '../../src/payment/peg.js';
import { PriceProviderClient } from '../../src/payment/peers.js';
import { PayoutService, PAYOUT } from '../../src/payment/payouts.js';
import { verifyReceiptChain } from '../../src/payment/receipts.js';
import { DEFAULT_RULES, payoutAt, payoutWeekOf } from '../../src/payment/rules.js';
import { PaymentService } from '../../src/payment/service.js';
import { startPriceStandin } from '../../src/payment/standins.js';
import type { Standin } from '../../src/peers/value-standin.js';
import type { PriceState } from '../../src/payment/standins.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

const T0 = Date.parse('2026-11-18T12:00:00Z'); // a Wednesday
const USERS = ['u1', 'u2', 'u3', 'u4'];

describe('weekly payout: exactly once per (week, user)', () => {
  let prices: Standin<PriceState>[];
  let store: Store;
  let dir: string;
  const clock = new ManualClock(T0);
  const make = (crashAfter?: number) => {
    const peg = new PegService(prices.map((p, i) => new PriceProviderClient(`p${i}`, p.url, 2000)), { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
    const svc = new PaymentService({ store, clock, peg, idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
    const life = new ChallengeLifecycle(svc, store, { rules: DEFAULT_RULES, violationDeductPercent: 10n });
    const pay = new PayoutService(svc, store, { scalePpm: 1_000_000n, disciplinePpm: 900_000n, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 4, leaseMs: 60_000, crashAfter });
    return { svc, life, pay };
  };

  beforeAll(async () => {
    prices = await Promise.all([0, 0.001, -0.001].map((bias) => startPriceStandin({ bias })));
    dir = tempDir('payouts');
    store = await openLmdbStore({ path: dir });
    const { svc, life } = make();
    const fund = (id: string, credit: string, amount: bigint) =>
      ledgerUpdate(store, () => clock.now(), transferKeys([{ id, debit: 'bank', credit, amount, code: 'test', }]), (tx) => (tx.transfer({ id, debit: 'bank', credit, amount, code: 'test' }), { result: undefined }));
    await fund('fund-escrow', 'escrow', 10n ** 15n);
    for (const u of USERS) {
      await fund(`fund-${u}`, userAccount(u, 'wallet'), 1000n * 10n ** 6n);
      await svc.buy(u, 'starter_10k', {});
      const c = ((await svc.myChallenges(u)).challenges[0] as { id: string }).id;
      await life.event(c, { type: 'fill', event_id: 'pass', realized_cents: 100_000, ts: clock.now() });
      await life.event(c, { type: 'fill', event_id: 'w1', realized_cents: 25_000, ts: clock.now() });
    }
    // u4 breaks a rule after passing: its payout is held for review
    const c4 = ((await svc.myChallenges('u4')).challenges[0] as { id: string }).id;
    await life.event(c4, { type: 'violation', event_id: 'v1', rule: 'daily_loss', ts: clock.now() });
    clock.set(payoutAt(payoutWeekOf(T0)) + 60_000);
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
    await Promise.all(prices.map((p) => p.close()));
  });

  it('a crash in the middle, a rerun and a second concurrent run post each payout once', async () => {
    const week = payoutWeekOf(T0);
    await expect(make(2).pay.runWeek(week)).rejects.toThrow(/injected crash/);
    const paidAfterCrash = await store.indexRange(K.log);
    expect(paidAfterCrash.filter((e) => e.member.startsWith(`payout:${week}:`) && e.member.endsWith(':trader'))).toHaveLength(2);
    // two processes run the week at once, then the catch-up at start runs it again
    const [a, b] = await Promise.all([make().pay.runWeek(week), make().pay.runWeek(week)]);
    expect([a, b].filter((r) => (r as { status: string }).status === 'busy').length).toBeLessThanOrEqual(1);
    await make().pay.runDue();
    await make().pay.runWeek(week);
    const log = (await store.indexRange(K.log)).map((e) => e.member).filter((m) => m.startsWith(`payout:${week}:`));
    for (const u of USERS) expect(log.filter((m) => m === `payout:${week}:${u}:trader`)).toHaveLength(1);
    const records = await Promise.all(USERS.map((u) => store.get(PAYOUT.record(week, u))));
    expect(records.map((r) => (r as { status: string }).status)).toEqual(['paid', 'paid', 'paid', 'review']);
    expect((await make().pay.warnings()).warnings).toEqual([expect.objectContaining({ user: 'u4', week, reason: 'violation_last_7_days' })]);
    // the held payout resolves at most once
    const { pay } = make();
    const rv = (await pay.reviews(true)).reviews[0] as { id: string };
    await pay.decide(rv.id, 'approve', 'ops', 'checked');
    await expect(pay.decide(rv.id, 'reject', 'ops', 'again')).rejects.toMatchObject({ status: 409 });
    const report = await checkLedger(store);
    expect(report).toMatchObject({ ok: true, mismatches: [], negative: [] });
    expect((await verifyReceiptChain(store)).ok).toBe(true);
  });
});

describe('weekly payout: circuit breaker', () => {
  it('sends payouts above 5 % of capital to manual review as pending holds; approve posts, reject voids, once', async () => {
    const prices = await Promise.all([0, 0.001, -0.001].map((bias) => startPriceStandin({ bias })));
    const dir = tempDir('payouts-breaker');
    const store = await openLmdbStore({ path: dir });
    const clock = new ManualClock(T0);
    try {
      const peg = new PegService(prices.map((p, i) => new PriceProviderClient(`p${i}`, p.url, 2000)), { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
      const svc = new PaymentService({ store, clock, peg, idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
      const life = new ChallengeLifecycle(svc, store, { rules: DEFAULT_RULES, violationDeductPercent: 10n });
      const pay = new PayoutService(svc, store, { scalePpm: 1_000_000n, disciplinePpm: 900_000n, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 4, leaseMs: 60_000 });
      // escrow holds only the entry fees (and 10,000 tokens of pool funding): capital is small
      const fund = (id: string, credit: string, amount: bigint) =>
        ledgerUpdate(store, () => clock.now(), transferKeys([{ id, debit: 'bank', credit, amount, code: 'test' }]), (tx) => (tx.transfer({ id, debit: 'bank', credit, amount, code: 'test' }), { result: undefined }));
      await fund('fund-escrow', 'escrow', 10_000n * 10n ** 6n);
      for (const u of ['v1', 'v2']) {
        await fund(`fund-${u}`, userAccount(u, 'wallet'), 1000n * 10n ** 6n);
        const c = ((await svc.buy(u, 'starter_10k', {})) as { challenge: string }).challenge;
        await life.event(c, { type: 'fill', event_id: 'pass', realized_cents: 100_000, ts: clock.now() });
        await life.event(c, { type: 'fill', event_id: 'w', realized_cents: 40_000, ts: clock.now() });
      }
      const week = payoutWeekOf(T0);
      clock.set(payoutAt(week) + 1000);
      const report = (await pay.runWeek(week)) as { outcomes: Record<string, number>; pool: { ok: boolean } };
      expect(report.outcomes).toEqual({ review: 2 });
      const reviews = ((await pay.reviews(true)).reviews as { id: string; reason: string; amount: string }[]).sort((a, b) => (a.id < b.id ? -1 : 1));
      expect(reviews.map((r) => r.reason)).toEqual(['circuit_breaker', 'circuit_breaker']);
      const escrowHeld = await readAccount(store, 'escrow');
      expect(escrowHeld.debits_pending).toBe(BigInt(reviews[0]!.amount) * 2n);
      const w1 = (await readAccount(store, userAccount('v1', 'wallet'))).credits_posted;
      await pay.decide(reviews[0]!.id, 'approve', 'ops', 'looked at the fills');
      await pay.decide(reviews[1]!.id, 'reject', 'ops', 'suspicious');
      await expect(pay.decide(reviews[0]!.id, 'approve', 'ops', 'twice')).rejects.toMatchObject({ code: 'review_closed' });
      const after = await readAccount(store, 'escrow');
      expect(after.debits_pending).toBe(0n);
      expect((await readAccount(store, userAccount('v1', 'wallet'))).credits_posted - w1).toBeGreaterThan(0n);
      expect(((await store.get(PAYOUT.record(week, 'v2'))) as { status: string }).status).toBe('rejected');
      expect((await pay.reviews(true)).reviews).toHaveLength(0);
      expect(await checkLedger(store)).toMatchObject({ ok: true });
      expect((await verifyReceiptChain(store)).ok).toBe(true);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      await Promise.all(prices.map((p) => p.close()));
    }
  });
});

