import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { AuthService } from '../../src/auth/service.js';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal } from '../support/refusal.js';

/**
 * The identity model reads accounts, devices and failed-login counts through their codecs
 * (src/auth/service.ts): a stored value that is not of the family is a corrupt record (500), never
 * an account, a device or a count handed on half-typed.
 */
describe('identity records in the store', () => {
  let store: Store;
  let auth: AuthService;
  const clock = new ManualClock(1_800_000_000_000);
  const code = async (p: Promise<unknown>) => (await refusal(p)).code;

  beforeAll(async () => {
    store = await openLmdbStore({ path: tempDir('auth-records') });
    auth = new AuthService({ store, clock, logger: pino({ level: 'silent' }), tokenTtlMs: 60_000, partnerTokenTtlMs: 60_000, deviceTokenTtlMs: 60_000 });
  });
  afterAll(() => store.close());

  it('refuses a stored account, device or count that is not of its family as corrupt_record', async () => {
    await store.set('auth:account:bad', { user: 'bad', name: 'x', roles: 'operator', hash: 'h', disabled: false, created_at: 1 });
    expect(await code(auth.account('bad'))).toBe('corrupt_record');
    expect(await code(auth.login('bad', 'password!', '10.0.0.1'))).toBe('corrupt_record');
    expect(await code(auth.updateAccount('bad', { name: 'y' }))).toBe('corrupt_record');
    await store.index('auth:accounts', 'bad', 1);
    expect(await code(auth.accounts())).toBe('corrupt_record');

    await store.set('auth:device:d_bad', { id: 'd_bad', gate: 'A', name: 'x', token_hash: 7 });
    expect(await code(auth.revokeDevice('d_bad'))).toBe('corrupt_record');
    await store.index('auth:devices', 'd_bad', 1);
    expect(await code(auth.devices())).toBe('corrupt_record');

    const window = Math.floor(clock.now() / (15 * 60_000));
    await store.set(`auth:fail:addr:${window}:10.0.0.2`, 'many');
    expect(await code(auth.login('nobody', 'password!', '10.0.0.2'))).toBe('corrupt_record');
  });
});
