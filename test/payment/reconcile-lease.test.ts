import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Idempotency } from '../../src/idempotency.js';
import { PegService } from '../../src/payment/peg.js';
import { BankingClient } from '../../src/payment/peers.js';
import { RECON, Reconciler } from '../../src/payment/reconcile.js';
import { PaymentService } from '../../src/payment/service.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// A reconciliation pull whose lease ran out (or was lost with a failed-over Redis primary) while a
// newer pull took over and moved the bank-event cursor on: the old pull stops at its next step and
// never takes the cursor back.

let peers: PaymentStandins | undefined;
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  await peers?.close();
});

describe('the reconciliation cursor under a lost lease', () => {
  it('a pull that lost its lease stops and leaves the newer pull\'s cursor where it is', async () => {
    peers = await startPaymentStandins({ webhookSecret: newWebhookSecret() });
    // five events the hub knows nothing of: each is a difference, moving no money
    for (let i = 1; i <= 5; i++) peers.banking.state.events.push({ id: `evt_${i}`, seq: i, type: 'payment.confirmed', created: Date.now(), data: { payment_id: `pay_unknown_${i}`, ref: `ref_${i}`, amount_krw: 1000, usd_micro: 1 } });
    const inner = await openLmdbStore({ path: tempDir('recon-lease') });
    stores.push(inner);
    let takenOver = false;
    // after the old pull applied its first event, a newer pull holds the lease and is at event 4
    const takeOver = async (key: string) => {
      if (takenOver || key !== RECON.cursor) return;
      takenOver = true;
      await inner.update([RECON.lease, RECON.cursor], () => ({ writes: [{ op: 'set', key: RECON.lease, value: { token: 'newer-pull', until: Date.now() + 60_000 } }, { op: 'set', key: RECON.cursor, value: 4 }], result: null }));
    };
    const store = new Proxy(inner, {
      get(target, prop, recv) {
        if (prop === 'update') {
          return async (...args: Parameters<Store['update']>) => {
            await takeOver(args[0][0]!);
            return target.update(...args);
          };
        }
        if (prop === 'set') {
          return async (key: string, value: Json) => {
            await takeOver(key);
            return target.set(key, value);
          };
        }
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as Store;
    const clock = new ManualClock(Date.now());
    const svc = new PaymentService({ store, clock, peg: new PegService([], { windowMs: 1, maxGapMs: 1, minProviders: 2 }), idempotency: new Idempotency(store, clock), maxOnrampKrw: 1e7 });
    const reconciler = new Reconciler(svc, store, new BankingClient(peers.banking.url, 2000), { periodMs: 86_400_000, leaseMs: 60_000 });
    const report = await reconciler.pull();
    expect(takenOver).toBe(true);
    expect(report.events).toBe(1); // stopped after the first event
    expect(await inner.get(RECON.cursor)).toBe(4);
    expect(await inner.get(RECON.lease)).toMatchObject({ token: 'newer-pull' }); // and left the newer lease alone
  });
});
