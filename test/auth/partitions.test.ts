import { createHash, randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { AuthService } from '../../src/auth/service.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf } from '../../src/store/partition.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

/**
 * Accounts on the partitioned keyspace (src/auth/service.ts, docs/partitions.md): every update of
 * the identity model stays in one aggregate (the store refuses any other: the partition check is
 * on), the lists of accounts and devices are merged from their partitions, and what was stored
 * before the partitioned layout (global lists, tokens under auth:token:<sha256>) is still read and
 * still revoked.
 */
const T0 = 1_800_000_000_000;
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const store = await openLmdbStore({ path: tempDir('auth-partitions'), partitionCheck: true });
  stores.push(store);
  const clock = new ManualClock(T0);
  const auth = new AuthService({ store, clock, logger: pino({ level: 'silent' }), tokenTtlMs: 3_600_000, partnerTokenTtlMs: 3_600_000, deviceTokenTtlMs: 3_600_000 });
  return { store, clock, auth };
}

describe('accounts on partitions', () => {
  it('bootstrap, create, sign in, change, revoke and list, with every update inside one aggregate', async () => {
    const { auth, clock } = await setup();
    await auth.bootstrap({ admin: 'admin-password', partner: 'partner-password' });
    const users = Array.from({ length: 12 }, (_, i) => `user${i}`);
    for (const user of users) {
      clock.advance(1);
      await auth.createAccount({ user, roles: ['staff'], password: 'password1' });
    }
    // spread over several partitions, listed in creation order as one list
    expect(new Set(users.map((u) => partitionOf(`auth:account:${u}`))).size).toBeGreaterThan(4);
    expect((await auth.accounts()).map((a) => a.user)).toEqual(['admin', 'partner', ...users]);
    const a = await auth.login('user3', 'password1', 'ip');
    const b = await auth.login('user3', 'password1', 'ip');
    const other = await auth.login('user4', 'password1', 'ip');
    expect(await auth.authenticate(a.token)).toMatchObject({ id: 'user3' });
    // a new password ends every token of the account, and only of it
    await auth.updateAccount('user3', { password: 'password2' });
    expect(await auth.authenticate(a.token)).toBeUndefined();
    expect(await auth.authenticate(b.token)).toBeUndefined();
    expect(await auth.authenticate(other.token)).toMatchObject({ id: 'user4' });
    const c = await auth.login('user3', 'password2', 'ip');
    expect(await auth.revokeTokens('user3')).toBe(1);
    expect(await auth.authenticate(c.token)).toBeUndefined();
    await auth.logout(other.token, 'user4');
    expect(await auth.authenticate(other.token)).toBeUndefined();
    const admin = await auth.login('admin', 'admin-password', 'ip');
    expect(await auth.authenticate(admin.token)).toMatchObject({ id: 'admin', roles: ['operator'] });
  });

  it('devices: issued, listed newest first, revoked, each in its own partition', async () => {
    const { auth, clock } = await setup();
    const made = [];
    for (let i = 0; i < 6; i++) {
      clock.advance(1);
      made.push(await auth.issueDevice({ gate: 'A', name: `gate ${i}` }, 'admin'));
    }
    expect((await auth.devices()).map((d) => d.id)).toEqual(made.map((m) => m.device.id).reverse());
    expect(await auth.authenticate(made[2]!.token)).toMatchObject({ kind: 'device', gate: 'A' });
    await auth.revokeDevice(made[2]!.device.id);
    expect(await auth.authenticate(made[2]!.token)).toBeUndefined();
    expect(await auth.authenticate(made[3]!.token)).toMatchObject({ kind: 'device' });
    expect((await auth.devices()).map((d) => d.id)).not.toContain(made[2]!.device.id);
  });

  it('reads and revokes what was stored before the partitioned layout', async () => {
    const { auth, store } = await setup();
    // an account, a device and their tokens as the global layout wrote them
    const account = { user: 'old', name: 'Old', roles: ['staff'], hash: await hashPassword('old-password'), disabled: false, created_at: T0 - 10 };
    await store.set('auth:account:old', account);
    await store.index('auth:accounts', 'old', T0 - 10);
    const oldToken = `mt_${randomBytes(32).toString('base64url')}`;
    const oldToken2 = `mt_${randomBytes(32).toString('base64url')}`;
    for (const t of [oldToken, oldToken2]) {
      await store.set(`auth:token:${sha(t)}`, { id: 'old', name: 'Old', roles: ['staff'], kind: 'account', expires_at: T0 + 60_000 });
      await store.index('auth:tokens:old', sha(t), T0 + 60_000);
    }
    const devToken = `mt_${randomBytes(32).toString('base64url')}`;
    await store.set('auth:device:d_old', { id: 'd_old', gate: 'B', name: 'old gate', token_hash: sha(devToken), issued_by: 'admin', created_at: T0 - 5, expires_at: T0 + 60_000 });
    await store.index('auth:devices', 'd_old', T0 - 5);
    await store.set(`auth:token:${sha(devToken)}`, { id: 'd_old', name: 'old gate', roles: ['scanner'], kind: 'device', gate: 'B', device: 'd_old', expires_at: T0 + 60_000 });

    await auth.createAccount({ user: 'new', roles: [], password: 'new-password' });
    expect((await auth.accounts()).map((a) => a.user)).toEqual(['old', 'new']);
    expect((await auth.devices()).map((d) => d.id)).toEqual(['d_old']);
    expect(await auth.authenticate(oldToken)).toMatchObject({ id: 'old' });
    expect(await auth.authenticate(devToken)).toMatchObject({ id: 'd_old', kind: 'device' });
    expect((await auth.login('old', 'old-password', 'ip')).user).toBe('old');

    await auth.logout(oldToken2, 'old');
    expect(await auth.authenticate(oldToken2)).toBeUndefined();
    expect(await auth.authenticate(oldToken)).toBeDefined();
    await auth.updateAccount('old', { roles: ['editor'] });
    expect(await auth.authenticate(oldToken)).toBeUndefined();
    expect(await store.indexCount('auth:tokens:old')).toBe(0);
    await auth.revokeDevice('d_old');
    expect(await auth.authenticate(devToken)).toBeUndefined();
    expect(await auth.devices()).toEqual([]);
  });
});
