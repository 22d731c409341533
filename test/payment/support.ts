import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { ChallengeLifecycle } from '../../src/payment/lifecycle.js';
import { K, ledgerUpdate, transferKeys, userAccount } from '../../src/payment/ledger.js';
import { PegService } from '../../src/payment/peg.js';
import { PriceProviderClient } from '../../src/payment/peers.js';
import { DEFAULT_RULES } from '../../src/payment/rules.js';
import { PayoutService } from '../../src/payment/payouts.js';
import { PK, PaymentService, challengeRecords, type ChallengeRecord } from '../../src/payment/service.js';
import type { Store } from '../../src/store/port.js';

/** The relay's services over one store, without peers (challenges are written as already passed). */
export function relay(store: Store, clock: ManualClock, over: Partial<ConstructorParameters<typeof PayoutService>[2]> = {}) {
  const peg = new PegService([], { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
  const svc = new PaymentService({ store, clock, peg, idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
  const life = new ChallengeLifecycle(svc, store, { rules: { profitTarget: 0.08, dailyLoss: 0.05, maxDrawdown: 0.1 }, violationDeductPercent: 10n });
  const pay = new PayoutService(svc, store, { scalePpm: 1_000_000n, disciplinePpm: 900_000n, breakerPercent: 5n, poolFactor: 2n, catchUpWeeks: 4, leaseMs: 60_000, ...over });
  return { svc, life, pay, store };
}

/** bank -> account (a test deposit). */
export const deposit = (store: Store, now: number, id: string, credit: string, amount: bigint) =>
  ledgerUpdate(store, () => now, transferKeys([{ id, debit: 'bank', credit, amount, code: 'test' }]), (tx) => (tx.transfer({ id, debit: 'bank', credit, amount, code: 'test' }), { result: undefined }));

/** Writes a challenge that has passed the challenge engine, with a chosen peg (tokens per USD x 10^6). */
export async function passedChallenge(store: Store, user: string, id: string, kind: string, size: number, pegPpm: number): Promise<void> {
  const rec: ChallengeRecord = {
    id, kind, user, state: 'passed', account_size: size, entry_fee: '0',
    peg: { peg_ppm: String(pegPpm), peg_rate: (pegPpm / 1e6).toFixed(6), snapshot_ts: 0, window_ms: 300_000, inputs: [] },
    broker_account: `BA-${id}`, receipt_hash: '', started_at: 0, stats: { realized_cents: 0, peak_cents: 0, day: '', day_cents: 0 }, violations: [], collateral: '0',
  };
  await store.update([PK.challenge(id)], () => ({
    writes: [
      { op: 'set', key: PK.challenge(id), value: challengeRecords.encode(rec) },
      { op: 'index', key: PK.userChallenges(user), member: id, score: 1 },
      { op: 'index', key: PK.funded, member: id, score: 1 },
    ],
    result: undefined,
  }));
}

/** Every transfer in the log, as stored. */
export async function logTransfers(store: Store): Promise<{ id: string; code: string; amount: string; debit: string; credit: string; status: string }[]> {
  const ids = (await store.indexRange(K.log)).map((e) => e.member);
  return (await store.getMany(ids.map((id) => K.transfer(id)))) as never;
}

export const wallet = (u: string) => userAccount(u, 'wallet');

/**
 * Escrow funded, and each user with a starter_10k bought at the peg of the given price providers,
 * passed, and 50 USD realised at the clock's time (so each has the same payout in that week).
 */
export async function seedProfitableChallenges(store: Store, clock: ManualClock, priceUrls: string[], users: string[]): Promise<void> {
  const peg = new PegService(priceUrls.map((url, i) => new PriceProviderClient(`p${i}`, url, 2000)), { windowMs: 300_000, maxGapMs: 60_000, minProviders: 2 });
  const svc = new PaymentService({ store, clock, peg, idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
  const life = new ChallengeLifecycle(svc, store, { rules: DEFAULT_RULES, violationDeductPercent: 10n });
  await deposit(store, clock.now(), 'fund-escrow', 'escrow', 10n ** 16n);
  for (const u of users) {
    await deposit(store, clock.now(), `fund-${u}`, userAccount(u, 'wallet'), 200n * 10n ** 6n);
    const c = ((await svc.buy(u, 'starter_10k', {})) as { challenge: string }).challenge;
    await life.event(c, { type: 'fill', event_id: 'pass', realized_cents: 100_000, ts: clock.now() });
    await life.event(c, { type: 'fill', event_id: 'w', realized_cents: 5_000, ts: clock.now() });
  }
}
