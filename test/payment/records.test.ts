import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { demoStates } from '../../src/demo/seed.js';
import { Idempotency } from '../../src/idempotency.js';
import type { ChainClient } from '../../src/payment/peers.js';
import { leases, offrampOutcomes } from '../../src/payment/reconcile.js';
import { onrampRecords } from '../../src/payment/service.js';
import { TK, TreeHeads } from '../../src/payment/tree-heads.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

/**
 * The relay's verified tree head and the idempotency keys (and the demo's state) are read through
 * their codecs (payment/sth.ts, idempotency.ts, demo.ts): a stored value that is not of the family
 * is a corrupt record (500), never a head to check against or an answer to replay.
 */
describe('payment records in the store', () => {
  let store: Store;
  const clock = new ManualClock(1_800_000_000_000);
  const code = async (p: Promise<unknown>) => (await refusal(p)).code;

  beforeAll(async () => {
    store = await openLmdbStore({ path: tempDir('payment-records') });
  });
  afterAll(() => store.close());

  it('refuses a stored tree head that is not one as corrupt_record', async () => {
    const heads = new TreeHeads(store, {} as ChainClient, generateKeyPairSync('ed25519').publicKey, clock);
    await store.set(TK.verified, { tree_size: '5', timestamp: 1, root: 'ab', signature: 's' });
    expect(await code(heads.lastVerified())).toBe('corrupt_record');
  });

  it('refuses a stored idempotency key that is not one as corrupt_record, not replayed', async () => {
    const idem = new Idempotency(store, clock);
    await store.set('idem:u:k1', { state: 'done', fp: 'f', answer: 'ok' });
    expect(await code(idem.begin('u', 'k1', 'f'))).toBe('corrupt_record');
    await store.set('idem:u:k2', { state: 'finished', fp: 'f' });
    expect(await code(idem.begin('u', 'k2', 'f'))).toBe('corrupt_record');
    const done = await idem.begin('u', 'k3', 'f');
    expect(await idem.begin('u', 'k3', 'f').catch((e: { code: string }) => e.code)).toBe('idempotency_in_progress');
    expect('ticket' in done).toBe(true);
    expect(() => Idempotency.done({ state: 'done', fp: 'f', answer: 'ok' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
  });

  it('refuses a stored lease or off-ramp outcome that is not one as corrupt_record', () => {
    expect(leases.decode({ token: 't', until: 5 })).toEqual({ token: 't', until: 5 });
    expect(() => leases.decode({ token: 't' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
    expect(offrampOutcomes.decode({ state: 'paid', ts: 1 })).toEqual({ state: 'paid', ts: 1 });
    expect(() => offrampOutcomes.decode({ state: 'lost', ts: 1 })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
  });

  it('refuses a stored on-ramp that is not one as corrupt_record', () => {
    const open = { id: 'or_1', user: 'u', amount_krw: 1000, method: 'card', peg_ppm: '1', created_at: 1, state: 'open' };
    expect(onrampRecords.decode(open)).toEqual(open);
    expect(() => onrampRecords.decode({ ...open, amount_krw: '1000' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
    expect(() => onrampRecords.decode({ ...open, state: 'paid' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
  });

  it('refuses a stored demo state that is not one as corrupt_record', () => {
    expect(demoStates.decode({ show_id: 's_1', tickets: ['A'] })).toEqual({ show_id: 's_1', tickets: ['A'] });
    expect(() => demoStates.decode({ tickets: 'A-1' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
  });
});

describe('small pointers and tickets in the store', () => {
  it('refuses a stored receipt pointer or demo sign-in ticket that is not one as corrupt_record', async () => {
    const { receiptIds } = await import('../../src/intake/service.js');
    expect(receiptIds.decode('sub_1')).toBe('sub_1');
    expect(() => receiptIds.decode({ id: 'sub_1' })).toThrow(expect.objectContaining({ code: 'corrupt_record' }));
  });
});
