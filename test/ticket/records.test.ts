import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { Bus } from '../../src/bus.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { CheckIns } from '../../src/ticket/checkin.js';
import { countByScan } from '../../src/ticket/counts.js';
import { K, NT } from '../../src/ticket/keys.js';
import { OfflineLists } from '../../src/ticket/offline.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

/**
 * Ticketing reads its stored values through codecs (src/ticket/records.ts, offline.ts): a code
 * pointer, a settled offline scan, a conflict, a reservation met in a scan or the list signing key
 * that is not of its family is a corrupt record (500), never handed on.
 */
describe('ticket records in the store', () => {
  let store: Store;
  const clock = new ManualClock(1_800_000_000_000);
  const bus = { emit: () => undefined } as unknown as Bus;
  const code = async (p: Promise<unknown>) => (await refusal(p)).code;

  beforeAll(async () => {
    store = await openLmdbStore({ path: tempDir('ticket-records') });
  });
  afterAll(() => store.close());

  it('refuses a stored value that is not of its family as corrupt_record', async () => {
    const checkins = new CheckIns(store, clock, bus);
    await store.set(K.code('BADCODE1'), { id: 'r_1' });
    expect(await code(checkins.checkInByCode('BADCODE1', {}))).toBe('corrupt_record');

    await store.set(K.code('GOODCODE'), 'r_missing');
    // the code names no ticket: its offline scan is settled among the attempts without one
    await store.set(NT.offlineScan('dev', 'scan-1'), { id: 'scan-1', result: 'maybe', replayed: false });
    const scan = { id: 'scan-1', code: 'GOODCODE', scanned_at: new Date(clock.now()).toISOString(), source: 'camera' as const };
    expect(await code(checkins.settleOffline(scan, { device: 'dev' }))).toBe('corrupt_record');

    await store.push(K.conflicts, { at: 'x', reason: 'lost' }, 10);
    expect(await code(checkins.conflicts({ limit: 10 }))).toBe('corrupt_record');

    await store.set(K.reservation('r_bad'), { id: 'r_bad', show_id: 's_1', status: 'entry_allowed' });
    await store.index(K.reservations, 'r_bad', 1);
    expect(await code(countByScan(store, 's_1'))).toBe('corrupt_record');

    await store.set(K.listSigningKey, { alg: 'RSA', key_id: 'k' });
    expect(await code(new OfflineLists(store, clock).signingKey())).toBe('corrupt_record');
  });
});
