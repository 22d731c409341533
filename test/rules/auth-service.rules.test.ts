import { createHash } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { mergedIndexRange } from '../../src/store/merged.js';
import { PARTITIONS, partitionKey, partitionKeys, partitionOf } from '../../src/store/partition.js';
import type { Store, Write } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal } from '../support/refusal.js';

// The identity model's rules (src/auth/service.ts; docs/auth.md): admin and partner exist from the
// first start (a configured password applied, else one generated and logged once); tokens are
// `mt_` + 256 random bits, stored only as their SHA-256, with a TTL; a new password, new roles or
// disabling revokes an account's tokens; admin keeps the operator role and cannot be disabled;
// failed logins are counted per (account, address), per address and per account, 429 past a limit
// until the window ends; devices get scanner tokens bound to a gate, revocable.
// Argon2 (src/auth/passwords.ts, its own rule tests) is replaced by a cheap stand-in here: these
// rules are about which hash the service keeps and checks, not how it is made.
const load = async () => {
  vi.resetModules();
  vi.doMock('../../src/auth/passwords.js', () => ({
    MIN_PASSWORD: 8,
    MAX_PASSWORD: 256,
    hashPassword: async (p: string) => `h:${p}`,
    verifyPassword: async (stored: string | undefined, p: string) => stored !== undefined && stored === `h:${p}`,
  }));
  return import('../../src/auth/service.js');
};
afterEach(() => {
  vi.doUnmock('../../src/auth/passwords.js');
});

const T0 = 1_800_000_000_000; // a whole number of 15-minute windows
const MIN = 60_000;
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
// where a token's record is kept: in the partition its first byte names (docs/partitions.md)
const tokenKey = (token: string) => partitionKey(`auth:token:${sha(token)}`, Buffer.from(token.slice(3, 5), 'base64url')[0]! & (PARTITIONS - 1));

async function setup(limits?: Record<string, number>) {
  const mod = await load();
  const store = await openLmdbStore({ path: tempDir('auth-rules') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const logs: { level: string; obj: unknown; msg: string }[] = [];
  const logger = {
    info: (obj: unknown, msg: string) => logs.push({ level: 'info', obj, msg }),
    warn: (obj: unknown, msg: string) => logs.push({ level: 'warn', obj, msg }),
  };
  const mk = () =>
    new mod.AuthService({
      store: recording,
      clock,
      logger: logger as never,
      tokenTtlMs: 60 * MIN,
      partnerTokenTtlMs: 600 * MIN,
      deviceTokenTtlMs: 6000 * MIN,
      ...(limits ? { limits } : {}),
    });
  return { ...mod, auth: mk(), mk, store, clock, logs, writes };
}

describe('the fixed values', () => {
  it('names the roles, the device and super roles, the two first accounts and the login limits', async () => {
    const m = await load();
    expect(m.ROLES).toEqual(['operator', 'staff', 'partner', 'editor', 'trader']);
    expect([m.DEVICE_ROLE, m.SUPER_ROLE, m.ADMIN_USER, m.PARTNER_USER]).toEqual(['scanner', 'operator', 'admin', 'partner']);
    expect(m.DEFAULT_LOGIN_LIMITS).toEqual({ perPair: 5, perAddress: 30, perAccount: 100, windowMs: 15 * MIN });
  });

  it('takes user names of 2 to 32 lower-case letters, digits, dots, hyphens and underscores, starting with a letter or digit', async () => {
    const { USER_RE } = await load();
    for (const u of ['ab', 'a1', '0x', 'kim.s', 'a-b_c', 'a'.repeat(32)]) expect(USER_RE.test(u), u).toBe(true);
    for (const u of ['a', '.ab', '-ab', '_ab', 'Ab', 'a b', 'a'.repeat(33), 'ab!', 'ab\n', '가나']) expect(USER_RE.test(u), u).toBe(false);
  });
});

describe('the first start', () => {
  it('creates admin (operator) and partner with the configured passwords, without logging them', async () => {
    const { auth, logs } = await setup();
    await auth.bootstrap({ admin: 'admin-pass-1', partner: 'partner-pass-1' });
    expect(await auth.account('admin')).toEqual({ user: 'admin', name: '운영자', roles: ['operator'], disabled: false, createdAt: new Date(T0).toISOString() });
    expect(await auth.account('partner')).toMatchObject({ user: 'partner', name: '렌탈 파트너', roles: ['partner'] });
    expect((await auth.login('admin', 'admin-pass-1', 'ip')).roles).toEqual(['operator']);
    expect((await auth.login('partner', 'partner-pass-1', 'ip')).roles).toEqual(['partner']);
    expect(logs).toEqual([]);
  });

  it('generates a password once when none is configured, logs it once, and keeps it at the next start', async () => {
    const { auth, mk, logs } = await setup();
    await auth.bootstrap({});
    expect(logs.map((l) => [l.level, l.msg])).toEqual([
      ['warn', 'generated a password for "admin" (shown once; set ADMIN_PASSWORD to choose it)'],
      ['warn', 'generated a password for "partner" (shown once; set PARTNER_PASSWORD to choose it)'],
    ]);
    const pw = (logs[0]!.obj as { user: string; password: string }).password;
    expect((logs[0]!.obj as { user: string }).user).toBe('admin');
    expect(pw).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect((logs[1]!.obj as { password: string }).password).not.toBe(pw);
    await mk().bootstrap({});
    expect(logs).toHaveLength(2);
    expect((await auth.login('admin', pw, 'ip')).user).toBe('admin');
  });

  it('re-applies a configured password at a later start, revoking the old tokens; the same one changes nothing', async () => {
    const { auth, mk, logs } = await setup();
    await auth.bootstrap({ admin: 'first-password' });
    const t = await auth.login('admin', 'first-password', 'ip');
    await mk().bootstrap({ admin: 'first-password' });
    expect(await auth.authenticate(t.token)).toBeDefined();
    expect(logs.filter((l) => l.level === 'info')).toEqual([]);
    await mk().bootstrap({ admin: 'second-password' });
    expect(logs.filter((l) => l.level === 'info')).toEqual([{ level: 'info', obj: { user: 'admin' }, msg: 'account password set from the configuration' }]);
    expect(await auth.authenticate(t.token)).toBeUndefined();
    expect(await refusal(auth.login('admin', 'first-password', 'ip2'))).toMatchObject({ code: 'invalid_credentials' });
    expect((await auth.login('admin', 'second-password', 'ip2')).user).toBe('admin');
    // an account made without a configured password takes one configured later
    await mk().bootstrap({ admin: 'second-password', partner: 'partner-later' });
    expect((await auth.login('partner', 'partner-later', 'ip')).user).toBe('partner');
  });
});

describe('accounts', () => {
  it('are created with the user as default name and roles given once; a second one of a name is 409', async () => {
    const { auth, clock } = await setup();
    expect(await auth.createAccount({ user: 'kim', roles: ['staff', 'editor', 'staff'], password: 'pw-kim-123' })).toEqual({
      user: 'kim',
      name: 'kim',
      roles: ['staff', 'editor'],
      disabled: false,
      createdAt: new Date(T0).toISOString(),
    });
    clock.advance(1_000);
    expect(await refusal(auth.createAccount({ user: 'kim', name: 'Kim', roles: [], password: 'x' }), { details: true })).toEqual({
      status: 409,
      code: 'account_exists',
      message: 'an account named kim exists',
      details: { user: 'kim' },
    });
    expect((await auth.account('kim')).name).toBe('kim');
    await auth.createAccount({ user: 'lee', name: '이', roles: ['trader'], password: 'pw' });
    clock.advance(-5_000);
    await auth.createAccount({ user: 'aaa', roles: [], password: 'pw' });
    // listed by creation time
    expect((await auth.accounts()).map((a) => a.user)).toEqual(['aaa', 'kim', 'lee']);
    expect(await refusal(auth.account('nobody'))).toEqual({ status: 404, code: 'unknown_account', message: 'no account nobody' });
  });

  it('revoke every token on a new password, new roles or disabling, but not on a new name or enabling', async () => {
    const { auth } = await setup();
    await auth.createAccount({ user: 'kim', roles: ['staff'], password: 'pw1' });
    const tokens = async () => [await auth.login('kim', 'pw1', 'a'), await auth.login('kim', 'pw1', 'b')].map((t) => t.token);
    const live = async (ts: string[]) => Promise.all(ts.map(async (t) => (await auth.authenticate(t)) !== undefined));

    let ts = await tokens();
    expect(await auth.updateAccount('kim', { name: '김' })).toMatchObject({ name: '김', roles: ['staff'] });
    expect(await live(ts)).toEqual([true, true]);
    await auth.updateAccount('kim', { disabled: false });
    expect(await live(ts)).toEqual([true, true]);

    expect(await auth.updateAccount('kim', { roles: ['editor', 'editor', 'staff'] })).toMatchObject({ roles: ['editor', 'staff'] });
    expect(await live(ts)).toEqual([false, false]);

    ts = await tokens();
    await auth.updateAccount('kim', { password: 'pw2' });
    expect(await live(ts)).toEqual([false, false]);
    await auth.updateAccount('kim', { password: 'pw1' });

    ts = await tokens();
    expect(await auth.updateAccount('kim', { disabled: true })).toMatchObject({ disabled: true, name: '김', roles: ['editor', 'staff'] });
    expect(await live(ts)).toEqual([false, false]);
    expect(await refusal(auth.login('kim', 'pw1', 'a'))).toMatchObject({ status: 401, code: 'invalid_credentials' });
    await auth.updateAccount('kim', { disabled: false });
    expect((await auth.login('kim', 'pw1', 'a')).roles).toEqual(['editor', 'staff']);
  });

  it('keep admin an operator that cannot be disabled', async () => {
    const { auth } = await setup();
    await auth.bootstrap({ admin: 'admin-pw' });
    const last = { status: 409, code: 'last_operator', message: 'the admin account keeps the operator role and cannot be disabled' };
    expect(await refusal(auth.updateAccount('admin', { disabled: true }))).toEqual(last);
    expect(await refusal(auth.updateAccount('admin', { roles: ['staff'] }))).toEqual(last);
    expect(await refusal(auth.updateAccount('admin', { roles: [] }))).toEqual(last);
    expect(await auth.updateAccount('admin', { roles: ['staff', 'operator'], disabled: false })).toMatchObject({ roles: ['staff', 'operator'], disabled: false });
    // another account may be disabled and lose every role
    await auth.createAccount({ user: 'op2', roles: ['operator'], password: 'pw' });
    expect(await auth.updateAccount('op2', { roles: [], disabled: true })).toMatchObject({ roles: [], disabled: true });
    expect(await refusal(auth.updateAccount('ghost', { name: 'x' }))).toEqual({ status: 404, code: 'unknown_account', message: 'no account ghost' });
  });
});

describe('login', () => {
  it('issues a fresh mt_ token for the configured time; the partner’s lasts longer', async () => {
    const { auth, store } = await setup();
    await auth.bootstrap({ admin: 'admin-pw', partner: 'partner-pw' });
    await auth.createAccount({ user: 'kim', name: '김', roles: ['staff'], password: 'pw' });
    const a = await auth.login('kim', 'pw', 'ip');
    const b = await auth.login('kim', 'pw', 'ip');
    expect(a).toMatchObject({ user: 'kim', name: '김', roles: ['staff'], expiresAt: new Date(T0 + 60 * MIN).toISOString() });
    expect(a.token).toMatch(/^mt_[A-Za-z0-9_-]{43}$/);
    expect(b.token).not.toBe(a.token);
    expect((await auth.login('partner', 'partner-pw', 'ip')).expiresAt).toBe(new Date(T0 + 600 * MIN).toISOString());
    expect((await auth.login('admin', 'admin-pw', 'ip')).expiresAt).toBe(new Date(T0 + 60 * MIN).toISOString());
    // only the token's SHA-256 is kept
    expect(await store.get(tokenKey(a.token))).toEqual({ id: 'kim', name: '김', roles: ['staff'], kind: 'account', expires_at: T0 + 60 * MIN });
    expect(await store.get(partitionKey(`auth:token:${a.token}`, partitionOf('auth:account:kim')))).toBeUndefined();
    // the token is kept in its account's partition, indexed in its account's aggregate
    expect(tokenKey(a.token)).toBe(partitionKey(`auth:token:${sha(a.token)}`, partitionOf('auth:account:kim')));
    expect((await store.indexRange('auth:account:kim:tokens')).map((e) => [e.member, e.score]).sort()).toEqual(
      [
        [sha(a.token), T0 + 60 * MIN],
        [sha(b.token), T0 + 60 * MIN],
      ].sort(),
    );
  });

  it('writes the token with its TTL', async () => {
    const { auth, writes } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    writes.length = 0;
    const t = await auth.login('kim', 'pw', 'ip');
    expect(writes).toContainEqual(expect.objectContaining({ op: 'set', key: tokenKey(t.token), ttlMs: 60 * MIN }));
  });

  it('answers one 401 for a wrong password, an unknown user, a malformed name and a disabled account', async () => {
    const { auth } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    const wrong = { status: 401, code: 'invalid_credentials', message: 'the user or the password is wrong' };
    expect(await refusal(auth.login('kim', 'nope', 'ip'))).toEqual(wrong);
    expect(await refusal(auth.login('lee', 'pw', 'ip'))).toEqual(wrong);
    expect(await refusal(auth.login('KIM', 'pw', 'ip'))).toEqual(wrong);
    await auth.updateAccount('kim', { disabled: true });
    expect(await refusal(auth.login('kim', 'pw', 'ip'))).toEqual(wrong);
  });

  it('does not look up a malformed user name', async () => {
    const { auth, store } = await setup();
    // an account record under a key no valid name can reach
    await store.update([], () => ({
      writes: [{ op: 'set', key: 'auth:account:Bad Name', value: { user: 'Bad Name', name: 'x', roles: [], hash: 'h:pw', disabled: false, created_at: T0 } }],
      result: undefined,
    }));
    expect((await refusal(auth.login('Bad Name', 'pw', 'ip'))).code).toBe('invalid_credentials');
  });

  it('refuses with 429 after 5 failures of one account from one address, until the window ends', async () => {
    const { auth, clock, writes } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    clock.set(T0 + 10 * MIN + 500); // 4 min 59.5 s before the 15-minute window ends
    writes.length = 0;
    for (let i = 0; i < 5; i++) expect((await refusal(auth.login('kim', 'bad', '1.1.1.1'))).code).toBe('invalid_credentials');
    // failures are counted with a TTL of two windows
    expect(writes.filter((w: Write) => w.op === 'set').every((w) => w.op === 'set' && w.ttlMs === 30 * MIN)).toBe(true);
    expect(writes).toHaveLength(15);
    const limited = await refusal(auth.login('kim', 'pw', '1.1.1.1'), { details: true });
    expect(limited).toEqual({ status: 429, code: 'too_many_attempts', message: 'too many failed logins: wait before trying again', details: { retry_after_s: 300 } });
    // another address, or another account from this one, is not limited by the pair
    expect((await auth.login('kim', 'pw', '2.2.2.2')).user).toBe('kim');
    clock.set(T0 + 15 * MIN - 1);
    expect((await refusal(auth.login('kim', 'pw', '1.1.1.1'), { details: true })).details).toEqual({ retry_after_s: 1 });
    clock.set(T0 + 15 * MIN);
    expect((await auth.login('kim', 'pw', '1.1.1.1')).user).toBe('kim');
  });

  it('lets the fifth failure through to the password check, and a success counts nothing', async () => {
    const { auth } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    for (let i = 0; i < 4; i++) await refusal(auth.login('kim', 'bad', 'ip'));
    for (let i = 0; i < 3; i++) expect((await auth.login('kim', 'pw', 'ip')).user).toBe('kim');
    expect((await refusal(auth.login('kim', 'bad', 'ip'))).code).toBe('invalid_credentials');
    expect((await refusal(auth.login('kim', 'pw', 'ip'))).code).toBe('too_many_attempts');
  });

  it('limits an address over all accounts, and an account over all addresses', async () => {
    const { auth } = await setup({ perPair: 100, perAddress: 3, perAccount: 4 });
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    await auth.createAccount({ user: 'lee', roles: [], password: 'pw' });
    // the address: 3 failures over three names
    for (const u of ['kim', 'lee', 'park']) await refusal(auth.login(u, 'bad', 'addr'));
    expect((await refusal(auth.login('lee', 'pw', 'addr'))).code).toBe('too_many_attempts');
    expect((await auth.login('lee', 'pw', 'other')).user).toBe('lee');
    // the account: kim failed once above; 3 more from other addresses reach 4
    for (const a of ['x1', 'x2', 'x3']) await refusal(auth.login('kim', 'bad', a));
    expect((await refusal(auth.login('kim', 'pw', 'fresh'))).code).toBe('too_many_attempts');
    expect((await auth.login('lee', 'pw', 'fresh')).user).toBe('lee');
  });

  it('keeps the other limits at their defaults when some are given', async () => {
    const { auth } = await setup({ perAddress: 1000 });
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    for (let i = 0; i < 5; i++) await refusal(auth.login('kim', 'bad', 'ip'));
    expect((await refusal(auth.login('kim', 'pw', 'ip'), { details: true })).details).toEqual({ retry_after_s: 900 });
  });
});

describe('tokens', () => {
  it('authenticate until they expire, with the account’s identity', async () => {
    const { auth, clock } = await setup();
    await auth.createAccount({ user: 'kim', name: '김', roles: ['staff'], password: 'pw' });
    const t = await auth.login('kim', 'pw', 'ip');
    const id = await auth.authenticate(t.token);
    expect(id).toStrictEqual({ id: 'kim', name: '김', roles: ['staff'], kind: 'account' });
    clock.set(T0 + 60 * MIN - 1);
    expect(await auth.authenticate(t.token)).toBeDefined();
    clock.set(T0 + 60 * MIN);
    expect(await auth.authenticate(t.token)).toBeUndefined();
  });

  it('refuse anything not shaped like a token, of more than 100 characters, or unknown', async () => {
    const { auth, store } = await setup();
    const plant = async (token: string) =>
      store.update([], () => ({
        writes: [{ op: 'set', key: `auth:token:${sha(token)}`, value: { id: 'x', name: 'x', roles: [], kind: 'account', expires_at: T0 + MIN } }],
        result: undefined,
      }));
    const t100 = `mt_${'a'.repeat(97)}`;
    const t101 = `mt_${'a'.repeat(98)}`;
    const bare = 'a'.repeat(40);
    for (const t of [t100, t101, bare]) await plant(t);
    expect(await auth.authenticate(t100)).toMatchObject({ id: 'x' });
    expect(await auth.authenticate(t101)).toBeUndefined();
    expect(await auth.authenticate(bare)).toBeUndefined();
    expect(await auth.authenticate('mt_unknown')).toBeUndefined();
    // a stored record of another shape is a corrupt record, not an identity
    await store.update([], () => ({ writes: [{ op: 'set', key: `auth:token:${sha('mt_odd')}`, value: { id: 'x' } }], result: undefined }));
    expect((await refusal(auth.authenticate('mt_odd'))).code).toBe('corrupt_record');
  });

  it('end one at a time on logout', async () => {
    const { auth, store } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    const a = await auth.login('kim', 'pw', 'ip');
    const b = await auth.login('kim', 'pw', 'ip');
    await auth.logout(a.token, 'kim');
    expect(await auth.authenticate(a.token)).toBeUndefined();
    expect(await auth.authenticate(b.token)).toBeDefined();
    expect((await store.indexRange('auth:account:kim:tokens')).map((e) => e.member)).toEqual([sha(b.token)]);
  });
});

describe('the stored layout', () => {
  it('indexes accounts and devices per partition (auth:accounts:{#p}, auth:devices:{#p}), and skips entries whose record is gone', async () => {
    const { auth, store, clock } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    clock.advance(1);
    await auth.createAccount({ user: 'lee', roles: [], password: 'pw' });
    const d1 = await auth.issueDevice({ gate: 'A', name: 'one' }, 'admin');
    clock.advance(1);
    const d2 = await auth.issueDevice({ gate: 'B', name: 'two' }, 'admin');
    expect((await store.indexRange(partitionKey('auth:accounts', partitionOf('auth:account:kim')))).map((e) => e.member)).toContain('kim');
    expect((await store.indexRange(partitionKey('auth:accounts', partitionOf('auth:account:lee')))).map((e) => e.member)).toContain('lee');
    expect((await mergedIndexRange(store, partitionKeys('auth:accounts'))).map((e) => e.member)).toEqual(['kim', 'lee']);
    expect((await mergedIndexRange(store, partitionKeys('auth:devices'))).map((e) => e.member)).toEqual([d1.device.id, d2.device.id]);
    expect(await store.indexCount('auth:accounts')).toBe(0);
    await store.del('auth:account:kim');
    await store.del(`auth:device:${d2.device.id}`);
    expect((await auth.accounts()).map((a) => a.user)).toEqual(['lee']);
    expect((await auth.devices()).map((d) => d.id)).toEqual([d1.device.id]);
  });

  it('counts failures under auth:fail:<pair|addr|acct>:<window>:<who>', async () => {
    const { auth, store } = await setup();
    await refusal(auth.login('kim', 'bad', '1.2.3.4'));
    const w = Math.floor(T0 / (15 * MIN));
    expect(await store.getMany([`auth:fail:pair:${w}:kim|1.2.3.4`, `auth:fail:addr:${w}:1.2.3.4`, `auth:fail:acct:${w}:kim`])).toEqual([1, 1, 1]);
  });

  it('keeps no gate or device key on an account’s token, and refuses a corrupt token record by name', async () => {
    const { auth, store } = await setup();
    await auth.createAccount({ user: 'kim', roles: [], password: 'pw' });
    const t = await auth.login('kim', 'pw', 'ip');
    const rec = (await store.get(tokenKey(t.token))) as Record<string, unknown>;
    expect(Object.keys(rec).sort()).toEqual(['expires_at', 'id', 'kind', 'name', 'roles']);
    await store.update([], () => ({ writes: [{ op: 'set', key: `auth:token:${sha('mt_bad')}`, value: { id: 1 } }], result: undefined }));
    expect(await refusal(auth.authenticate('mt_bad'))).toEqual({ status: 500, code: 'corrupt_record', message: 'a stored token is not readable' });
  });

  it('refuses each corrupt stored record by its name: an account, a device, a failed-login count', async () => {
    const { auth, store } = await setup();
    const put = (key: string, value: unknown) => store.update([], () => ({ writes: [{ op: 'set', key, value: value as never }], result: undefined }));
    const corrupt = (message: string) => ({ status: 500, code: 'corrupt_record', message });
    const account = { user: 'kim', name: 'Kim', roles: ['staff'], hash: 'h:pw', disabled: false, created_at: T0 };
    await put('auth:account:kim', account);
    expect((await auth.account('kim')).user).toBe('kim');
    for (const [field, value] of [['user', 1], ['name', null], ['roles', 'staff'], ['roles', [1]], ['hash', 2], ['disabled', 'no'], ['created_at', 'x']] as const) {
      await put('auth:account:kim', { ...account, [field]: value });
      expect(await refusal(auth.account('kim')), `${field}: ${JSON.stringify(value)}`).toEqual(corrupt(`a stored account is not readable (field ${field})`));
    }
    const device = { id: 'd1', gate: 'A', name: 'door', token_hash: 'x', issued_by: 'admin', created_at: T0, expires_at: T0 + MIN };
    await put('auth:device:d1', device);
    await store.update([], () => ({ writes: [{ op: 'index', key: 'auth:devices', member: 'd1', score: T0 }], result: undefined }));
    expect((await auth.devices()).map((d) => d.id)).toEqual(['d1']);
    await put('auth:device:d1', { ...device, gate: 3 });
    expect(await refusal(auth.devices())).toEqual(corrupt('a stored device is not readable (field gate)'));
    const w = Math.floor(T0 / (15 * MIN));
    await put(`auth:fail:acct:${w}:lee`, 'many');
    expect(await refusal(auth.login('lee', 'pw', 'ip'))).toEqual(corrupt('a stored failed-login count is not readable'));
  });

  it('lists the passwords it generated at this start, for the start-up banner', async () => {
    const { auth, logs } = await setup();
    await auth.bootstrap({ partner: 'partner-pass-1' });
    expect(auth.generated).toEqual([{ user: 'admin', password: (logs[0]!.obj as { password: string }).password }]);
  });

  it('keeps an account enabled when a change does not say otherwise', async () => {
    const { auth } = await setup();
    await auth.createAccount({ user: 'kim', roles: ['staff'], password: 'pw' });
    expect(await auth.updateAccount('kim', { name: '김' })).toStrictEqual({ user: 'kim', name: '김', roles: ['staff'], disabled: false, createdAt: new Date(T0).toISOString() });
    expect((await auth.account('kim')).disabled).toBe(false);
  });
});

describe('devices', () => {
  it('get a scanner token bound to a gate, for the device time, kept out of any account’s tokens', async () => {
    const { auth, clock, store } = await setup();
    const { token, device } = await auth.issueDevice({ gate: 'A', name: '정문 1' }, 'admin');
    expect(device).toEqual({
      id: expect.stringMatching(/^d_[0-9a-f]{12}$/),
      gate: 'A',
      name: '정문 1',
      issuedBy: 'admin',
      createdAt: new Date(T0).toISOString(),
      expiresAt: new Date(T0 + 6000 * MIN).toISOString(),
    });
    expect(token).toMatch(/^mt_/);
    expect(await auth.authenticate(token)).toStrictEqual({ id: device.id, name: '정문 1', roles: ['scanner'], kind: 'device', gate: 'A' });
    expect(await store.get(tokenKey(token))).toEqual({ id: device.id, name: '정문 1', roles: ['scanner'], kind: 'device', gate: 'A', device: device.id, expires_at: T0 + 6000 * MIN });
    expect(tokenKey(token)).toBe(partitionKey(`auth:token:${sha(token)}`, partitionOf(`auth:device:${device.id}`)));
    expect(await store.indexRange(`auth:account:${device.id}:tokens`)).toEqual([]);
    clock.set(T0 + 6000 * MIN);
    expect(await auth.authenticate(token)).toBeUndefined();
  });

  it('are listed newest first and revoked with their token', async () => {
    const { auth, clock } = await setup();
    const one = await auth.issueDevice({ gate: 'A', name: 'one' }, 'admin');
    clock.advance(1_000);
    const two = await auth.issueDevice({ gate: 'B', name: 'two' }, 'staff1');
    expect((await auth.devices()).map((d) => d.name)).toEqual(['two', 'one']);
    expect(await auth.revokeDevice(one.device.id)).toEqual({ revoked: true, id: one.device.id });
    expect(await auth.authenticate(one.token)).toBeUndefined();
    expect(await auth.authenticate(two.token)).toMatchObject({ gate: 'B' });
    expect((await auth.devices()).map((d) => d.name)).toEqual(['two']);
    expect(await refusal(auth.revokeDevice(one.device.id))).toEqual({ status: 404, code: 'unknown_device', message: `no device ${one.device.id}` });
  });
});
