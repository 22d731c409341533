import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { PegService } from '../../src/payment/peg.js';
import { PriceProviderClient } from '../../src/payment/peers.js';
import { PaymentService } from '../../src/payment/service.js';
import { checkLedger } from '../../src/payment/check.js';
import { K, availableOf, readAccount, userAccount } from '../../src/payment/ledger.js';
import { PAYOUT } from '../../src/payment/payouts.js';
import { verifyReceiptChain } from '../../src/payment/receipts.js';
import { payoutAt, payoutWeekOf } from '../../src/payment/rules.js';
import { startPriceStandin, type PriceState } from '../../src/payment/standins.js';
import type { Standin } from '../../src/peers/value-standin.js';
import { keySlot, partitionOfAggregate, partitionTag } from '../../src/store/partition.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { deposit, relay, seedProfitableChallenges } from '../payment/support.js';

// The payment ledger in one partition (docs/partitions.md): purchases and a weekly payout on a Redis
// Cluster of the test's own with the partition check on (an update spanning aggregates is refused);
// every payment key and every payment outbox message lands in the ledger partition's slot.

const binaries = clusterBinariesOrSkip();
const T0 = Date.parse('2026-11-18T12:00:00Z'); // a Wednesday
const USERS = ['c1', 'c2', 'c3'];

describe.skipIf(!binaries)('the payment ledger on a Redis Cluster', () => {
  let cluster: RedisClusterSetup;
  let store: RedisStore;
  let prices: Standin<PriceState>[];
  beforeAll(async () => {
    cluster = await startRedisCluster();
    prices = await Promise.all([0, 0.001, -0.001].map((bias) => startPriceStandin({ bias })));
    store = await openRedisStore({ target: { cluster: cluster.nodes.map((x) => ({ host: '127.0.0.1', port: x.port })) }, prefix: 'pl:', partitionCheck: true });
  }, 90_000);
  afterAll(async () => {
    await store?.close();
    await Promise.all((prices ?? []).map((p) => p.close()));
    await cluster?.stop();
  });

  it('purchases and a payout run, each one update of the ledger partition; the books check out', async () => {
    const clock = new ManualClock(T0);
    await seedProfitableChallenges(store, clock, prices.map((p) => p.url), USERS);
    const { pay } = relay(store, clock);
    const peg = new PegService(prices.map((p, i) => new PriceProviderClient(`p${i}`, p.url, 2000)), { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
    const svc = new PaymentService({ store, clock, peg, idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
    // a second purchase of another kind by the same user, and a refused one (too little left)
    await deposit(store, clock.now(), 'top-up-c1', userAccount('c1', 'wallet'), 300n * 10n ** 6n);
    const bought = (await svc.buy('c1', 'standard_25k', {})) as { challenge: string; receipt_hash: string };
    expect(bought.receipt_hash).toMatch(/^[0-9a-f]{64}$/);
    await expect(svc.buy('c2', 'pro_100k', {})).rejects.toMatchObject({ code: 'insufficient_balance' });
    const week = payoutWeekOf(T0);
    clock.set(payoutAt(week) + 60_000);
    const wallets = async () => Promise.all(USERS.map(async (u) => availableOf(await readAccount(store, userAccount(u, 'wallet')))));
    const before = await wallets();
    const report = (await pay.runWeek(week)) as { status: string; users: number };
    expect(report).toMatchObject({ status: 'done', users: USERS.length });
    const records = await Promise.all(USERS.map((u) => store.get(PAYOUT.record(week, u))));
    expect(records.map((r) => (r as { status: string }).status)).toEqual(USERS.map(() => 'paid'));
    const after = await wallets();
    USERS.forEach((_, i) => expect(after[i]! > before[i]!).toBe(true));
    expect((await store.indexRange(K.log)).some((e) => e.member === `payout:${week}:c1:trader`)).toBe(true);

    const books = await checkLedger(store);
    expect(books.ok).toBe(true);
    expect((await verifyReceiptChain(store)).ok).toBe(true);

    // every Redis key of the payment service, and its outbox messages, is in the ledger's slot
    const ledger = partitionOfAggregate('ledger');
    const slot = keySlot(`{${partitionTag(ledger)}}`);
    const keys: string[] = [];
    for (const m of await cluster.masters()) {
      const c = m.client();
      try {
        keys.push(...(await c.keys('pl:*')));
      } finally {
        c.disconnect();
      }
    }
    const payKeys = keys.filter((k) => /^pl:\{[^}]+\}[vlz]:pay:/.test(k));
    expect(payKeys.length).toBeGreaterThan(20);
    expect(payKeys.filter((k) => keySlot(k) !== slot)).toEqual([]);
    const messages = keys.filter((k) => /\}v:outbox:msg:/.test(k));
    expect(messages.length).toBeGreaterThan(USERS.length);
    expect(messages.filter((k) => !k.includes(`outbox:msg:{#${ledger}}:`))).toEqual([]);
  }, 120_000);
});
