import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { checkLedger } from '../../src/payment/check.js';
import { Idempotency } from '../../src/idempotency.js';
import { K, readAccount, userAccount } from '../../src/payment/ledger.js';
import { PegService } from '../../src/payment/peg.js';
import { PAYOUT, PayoutService } from '../../src/payment/payouts.js';
import { payoutAt, payoutWeekOf } from '../../src/payment/rules.js';
import { PaymentService } from '../../src/payment/service.js';
import { startPriceStandin, type PriceState } from '../../src/payment/standins.js';
import type { Standin } from '../../src/peers/value-standin.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { seedProfitableChallenges } from './support.js';

// A payout week's lease lost in a Redis failover (REDIS_MIN_REPLICAS=0: the lease was on the old
// primary only) lets a second process run the same week while the first is still paying. Each
// payout is a ledger transfer with an id made of the week and the user, and a transfer id is
// posted once: the two runs together pay every user exactly once.

const T0 = Date.parse('2026-11-11T12:00:00Z');
const USERS = Array.from({ length: 40 }, (_, i) => `lease${String(i).padStart(2, '0')}`);

describe('a payout week run twice at once after its lease was lost', () => {
  let prices: Standin<PriceState>[];
  let store: Store;
  const week = payoutWeekOf(T0);
  beforeAll(async () => {
    prices = await Promise.all([0, 0.001, -0.001].map((bias) => startPriceStandin({ bias })));
    store = await openLmdbStore({ path: tempDir('payout-lease-lost') });
    await seedProfitableChallenges(store, new ManualClock(T0), prices.map((p) => p.url), USERS);
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    await Promise.all((prices ?? []).map((p) => p.close()));
  });

  it('every user is paid exactly once, and the ledger checks out', async () => {
    const clock = new ManualClock(payoutAt(week) + 60_000);
    const service = () => {
      const svc = new PaymentService({ store, clock, peg: new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 2 }), idempotency: new Idempotency(store, clock), maxOnrampKrw: 0 });
      return new PayoutService(svc, store, { scalePpm: 1_000_000n, disciplinePpm: 900_000n, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 8, leaseMs: 60_000 });
    };
    const walletsBefore = await Promise.all(USERS.map(async (u) => (await readAccount(store, userAccount(u, 'wallet'))).credits_posted));
    const first = service();
    const second = service();
    let secondRun: Promise<unknown> | undefined;
    const firstRun = first.runWeek(week, () => {
      if (secondRun) return;
      // the failover: the promoted replica never had the first run's lease
      secondRun = store.del(PAYOUT.lease(week)).then(() => second.runWeek(week));
    });
    const [a] = await Promise.all([firstRun, (async () => {
      while (!secondRun) await new Promise((r) => setTimeout(r, 1));
      return secondRun;
    })()]);
    const b = await secondRun!;
    // both runs went through the week: the second was not turned away as busy
    expect(a).toMatchObject({ status: 'done' });
    expect(b).toMatchObject({ status: 'done' });

    const traderIds = (await store.indexRange(K.log)).map((e) => e.member).filter((m) => m.startsWith(`payout:${week}:`) && m.endsWith(':trader'));
    expect(traderIds).toHaveLength(USERS.length);
    expect(new Set(traderIds).size).toBe(USERS.length);
    const walletsAfter = await Promise.all(USERS.map(async (u) => (await readAccount(store, userAccount(u, 'wallet'))).credits_posted));
    const paid = walletsAfter.map((w, i) => w - walletsBefore[i]!);
    // the same P&L for everyone: the same payout for everyone, once
    expect(new Set(paid.map(String)).size).toBe(1);
    expect(paid[0]! > 0n).toBe(true);
    expect(await checkLedger(store)).toMatchObject({ ok: true, mismatches: [], negative: [] });
  }, 60_000);
});
