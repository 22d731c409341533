import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal } from '../support/refusal.js';
import { REFERRAL_DEST } from '../../src/chat/referral.js';
import { outboxWrites } from '../../src/outbox.js';

// Referrals (src/chat/referral.ts): a customer's code issued once; a redemption gives one reward to
// each side, once per referred customer; nobody redeems their own code (same id or same phone);
// GET shows the owner masked and the newest 100 rewards, newest first, of at most 10,000 kept.
// The module is loaded afresh in each test, so a change to its constants fails tests.
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/chat/referral.js')), ...(await import('../../src/errors.js')) };
};

const T0 = Date.UTC(2026, 10, 24, 3, 0, 0);
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const { ReferralService } = await load();
  const store = await openLmdbStore({ path: tempDir('chat-referral') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  return { service: new ReferralService({ store: recording, clock }), store, clock, writes };
}

const owner = { customerId: 1234, name: '김민지', phone: '010-1234-5678' };
const CODE = `MARU-${(1234).toString(36).toUpperCase()}`;

describe('issue', () => {
  it('writes the owner once and answers the same code after', async () => {
    const { service, store, clock, writes } = await setup();
    expect(await service.issue(owner)).toEqual({ code: CODE, created: true });
    expect(writes).toEqual([
      { op: 'set', key: 'referral:owner:1234', value: { code: CODE, customerId: 1234, name: '김민지', phone: '010-1234-5678', uses: 0, createdAt: new Date(T0).toISOString() } },
    ]);
    clock.advance(1000);
    expect(await service.issue({ ...owner, name: '다른이름' })).toEqual({ code: CODE, created: false });
    expect(writes).toHaveLength(1);
    expect(await store.get('referral:owner:1234')).toMatchObject({ name: '김민지', createdAt: new Date(T0).toISOString() });
  });
});

describe('info and exists', () => {
  it('shows the owner masked, the uses and the creation time', async () => {
    const { service } = await setup();
    await service.issue(owner);
    expect(await service.info(CODE.toLowerCase())).toEqual({
      code: CODE,
      owner: { customerId: 1234, name: '김*지', phone: '010-****-5678' },
      uses: 0,
      rewards: [],
      createdAt: new Date(T0).toISOString(),
    });
    expect(await service.exists(CODE)).toBe(true);
    expect(await service.exists('MARU-ZZ')).toBe(false);
  });

  it('refuses a malformed code with 400 and an unknown one with 404', async () => {
    const { service } = await setup();
    const bad = { status: 400, code: 'invalid_referral_code', message: 'a referral code is MARU- followed by the customer id in base 36' };
    expect(await refusal(service.info('NOPE-1'))).toEqual(bad);
    expect(await refusal(service.exists('MARU-'))).toEqual(bad);
    expect(await refusal(service.redeem('MARU-0', { customerId: 2 }))).toEqual(bad);
    expect(await refusal(service.info('MARU-ZZ'))).toEqual({ status: 404, code: 'referral_not_found', message: 'no customer holds the referral code MARU-ZZ' });
    expect(await refusal(service.redeem('MARU-ZZ', { customerId: 2 }))).toEqual({ status: 404, code: 'referral_not_found', message: 'no customer holds the referral code MARU-ZZ' });
  });
});

describe('redeem', () => {
  it('gives one reward to each side, counts the use, and only once per referred customer', async () => {
    const { service, clock, writes } = await setup();
    await service.issue(owner);
    writes.length = 0;
    clock.advance(60_000);
    const at = new Date(T0 + 60_000).toISOString();
    expect(await service.redeem(CODE, { customerId: 77, phone: '010-9999-0000' })).toEqual({ redeemed: true });
    const ownerEntry = { code: CODE, side: 'owner', customerId: 1234, referredCustomerId: 77, at };
    const referredEntry = { code: CODE, side: 'referred', customerId: 77, referredCustomerId: 77, at };
    // the referred customer's claim, with the owner's credit in the outbox of its partition; then
    // the owner's credit, once (marked under the owner)
    const credit = { code: CODE, owner: 1234, referred: 77, at };
    expect(writes).toEqual([
      { op: 'set', key: 'referral:redeemed:77', value: { code: CODE, at } },
      ...outboxWrites({ id: 'referral:77', dest: REFERRAL_DEST, payload: credit, createdAt: T0 + 60_000 }, 'referral:redeemed:77'),
      { op: 'set', key: 'referral:owner:1234:credited:77', value: at },
      { op: 'set', key: 'referral:owner:1234', value: { code: CODE, customerId: 1234, name: '김민지', phone: '010-1234-5678', uses: 1, createdAt: new Date(T0).toISOString() } },
      { op: 'push', key: 'referral:owner:1234:rewards', value: ownerEntry, cap: 10_000 },
      { op: 'push', key: 'referral:owner:1234:rewards', value: referredEntry, cap: 10_000 },
    ]);
    const n = writes.length;
    expect(await service.redeem(CODE, { customerId: 77 })).toEqual({ redeemed: false });
    // the outbox delivering the claim's item again credits nothing more
    await service.deliver({ id: 'referral:77', dest: REFERRAL_DEST, payload: credit, createdAt: T0 + 60_000 }, new AbortController().signal);
    expect(writes).toHaveLength(n);
    const info = await service.info(CODE);
    expect(info.uses).toBe(1);
    expect(info.rewards).toEqual([referredEntry, ownerEntry]);
    expect(await service.redeem(CODE, { customerId: 78 })).toEqual({ redeemed: true });
    expect((await service.info(CODE)).uses).toBe(2);
  });

  it('refuses the owner redeeming their own code, by id or by phone, with 409', async () => {
    const { service } = await setup();
    await service.issue(owner);
    const self = { status: 409, code: 'self_referral', message: 'a customer cannot redeem their own referral code' };
    expect(await refusal(service.redeem(CODE, { customerId: 1234 }))).toEqual(self);
    expect(await refusal(service.redeem(CODE, { customerId: 55, phone: '010-1234-5678' }))).toEqual(self);
    expect(await service.redeem(CODE, { customerId: 55, phone: '010-1234-5679' })).toEqual({ redeemed: true });
    expect((await service.info(CODE)).uses).toBe(1);
  });

  it('shows the newest 100 rewards, newest first', async () => {
    const { service, clock } = await setup();
    await service.issue(owner);
    for (let i = 1; i <= 51; i++) {
      clock.advance(1000);
      await service.redeem(CODE, { customerId: 10_000 + i });
    }
    const info = await service.info(CODE);
    expect(info.uses).toBe(51);
    expect(info.rewards).toHaveLength(100);
    expect(info.rewards[0]).toMatchObject({ side: 'referred', referredCustomerId: 10_051 });
    expect(info.rewards[1]).toMatchObject({ side: 'owner', referredCustomerId: 10_051 });
    expect(info.rewards[99]).toMatchObject({ side: 'owner', referredCustomerId: 10_002 });
  });
});

describe('stored records', () => {
  it('refuses an owner or a reward entry that is not one (500 corrupt_record naming it)', async () => {
    const { service, store } = await setup();
    const corrupt = (name: string) => ({ status: 500, code: 'corrupt_record', message: `a stored ${name} is not readable` });
    for (const bad of [{ code: 5, uses: 0 }, { code: CODE, uses: '0' }, { uses: 0 }, { code: CODE }]) {
      await store.set('referral:owner:1234', bad as Json);
      expect(await refusal(service.info(CODE)), JSON.stringify(bad)).toEqual(corrupt('referral owner'));
    }
    await store.set('referral:owner:1234', { code: CODE, customerId: 1234, name: '김민지', phone: '010-1234-5678', uses: 0, createdAt: new Date(T0).toISOString() });
    await store.push('referral:rewards:1234', { code: CODE, side: 1 } as Json, 10);
    expect(await refusal(service.info(CODE))).toEqual(corrupt('referral reward'));
  });
});
