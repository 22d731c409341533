import { afterAll, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Json, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal } from '../support/refusal.js';

// The coaching service's rules (src/coach/service.ts): registering replaces the vision and the
// action list, keeping by id each action's status and paid reward; a duplicate action id is 400
// duplicate_action; the owner list is newest first, 1 to 100 a page; the card of the day is the first open
// action in phase order, dated in the owner's time zone; setting a status is idempotent and
// 완료 pays the reward once. Real LMDB store in a temp dir; the module is loaded afresh per test.
const load = async () => {
  vi.resetModules();
  return import('../../src/coach/service.js');
};

const T0 = Date.parse('2026-03-10T05:00:00Z'); // 14:00 in Seoul
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const mod = await load();
  const store = await openLmdbStore({ path: tempDir('coach-rules') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const service = new mod.CoachService({ store: recording, clock });
  return { ...mod, service, store, clock, writes };
}

const acts = (...ids: string[]) => ids.map((id, i) => ({ id, title: `할 일 ${id}`, phase: '티' as const, reward: 10 * (i + 1) }));

describe('the fixed values', () => {
  it('names four phases, two statuses, Seoul by default, at most 50 actions and pages of 100', async () => {
    const m = await load();
    expect(m.PHASES).toEqual(['티', '옴', '타', '음']);
    expect(m.STATUSES).toEqual(['진행', '완료']);
    expect(m.DEFAULT_TIME_ZONE).toBe('Asia/Seoul');
    expect(m.MAX_ACTIONS).toBe(50);
    expect(m.MAX_PAGE).toBe(100);
  });

  it('dates a moment in a time zone, and knows a time zone from a made-up one', async () => {
    const { dayIn, isTimeZone } = await load();
    expect(dayIn('Asia/Seoul', Date.parse('2026-01-01T14:59:59.999Z'))).toBe('2026-01-01');
    expect(dayIn('Asia/Seoul', Date.parse('2026-01-01T15:00:00Z'))).toBe('2026-01-02');
    expect(dayIn('UTC', Date.parse('2026-01-01T15:00:00Z'))).toBe('2026-01-01');
    expect(dayIn('America/New_York', Date.parse('2026-07-04T03:59:00Z'))).toBe('2026-07-03');
    expect(isTimeZone('Asia/Seoul')).toBe(true);
    expect(isTimeZone('UTC')).toBe(true);
    expect(isTimeZone('Mars/Olympus')).toBe(false);
  });
});

describe('registering', () => {
  it('creates an owner with every action 대기, no points, Seoul time', async () => {
    const { service } = await setup();
    const r = await service.register('o1', { vision: '건강한 삶', actions: acts('a', 'b') });
    expect(r.created).toBe(true);
    expect(r.profile).toStrictEqual({
      vision: '건강한 삶',
      timeZone: 'Asia/Seoul',
      points: 0,
      actions: [
        { id: 'a', title: '할 일 a', phase: '티', reward: 10, status: '대기' },
        { id: 'b', title: '할 일 b', phase: '티', reward: 20, status: '대기' },
      ],
    });
    expect(await service.profile('o1')).toStrictEqual(r.profile);
  });

  it('refuses an action id given twice, naming it, and writes nothing', async () => {
    const { service, writes } = await setup();
    expect(await refusal(service.register('o1', { actions: [...acts('a', 'b'), ...acts('a')] }), { details: true })).toEqual({
      status: 400,
      code: 'duplicate_action',
      message: 'action id a appears twice',
      details: { actionId: 'a' },
    });
    expect(writes).toEqual([]);
    expect((await refusal(service.profile('o1'))).code).toBe('owner_not_found');
  });

  it('keeps, on a new registration, the status and paid reward of actions kept by id, and drops the rest', async () => {
    const { service, clock } = await setup();
    await service.register('o1', { vision: 'v1', timeZone: 'UTC', actions: acts('a', 'b', 'c') });
    clock.advance(60_000);
    await service.setAction('o1', 'a', '완료');
    await service.setAction('o1', 'b', '진행');
    clock.advance(60_000);
    const r = await service.register('o1', { actions: [{ id: 'a', title: '새 이름', phase: '음', reward: 99 }, ...acts('d'), { id: 'b', title: 'b', phase: '옴', reward: 1 }] });
    expect(r.created).toBe(false);
    // the vision is replaced (none given: none kept); the time zone is kept when none is given
    expect(r.profile).toStrictEqual({
      timeZone: 'UTC',
      points: 10,
      actions: [
        { id: 'a', title: '새 이름', phase: '음', reward: 99, status: '완료', paidAt: new Date(T0 + 60_000).toISOString(), completedOn: '2026-03-10' },
        { id: 'd', title: '할 일 d', phase: '티', reward: 10, status: '대기' },
        { id: 'b', title: 'b', phase: '옴', reward: 1, status: '진행' },
      ],
    });
    const again = await service.register('o1', { vision: '', timeZone: 'Asia/Tokyo', actions: [] });
    expect(again.profile).toStrictEqual({ timeZone: 'Asia/Tokyo', points: 10, actions: [] });
  });

  it('keeps the registration time and moves the update time', async () => {
    const { service, clock } = await setup();
    await service.register('o1', { actions: [] });
    clock.advance(5_000);
    await service.register('o1', { actions: [] });
    const { owners } = await service.list({ limit: 10, offset: 0 });
    expect(owners[0]).toStrictEqual({
      ownerId: 'o1',
      timeZone: 'Asia/Seoul',
      points: 0,
      actions: { 대기: 0, 진행: 0, 완료: 0 },
      createdAt: new Date(T0).toISOString(),
      updatedAt: new Date(T0 + 5_000).toISOString(),
    });
  });
});

describe('the owner list', () => {
  it('is newest first, counts every owner, and summarises actions by state', async () => {
    const { service, clock } = await setup();
    for (const id of ['o1', 'o2', 'o3']) {
      await service.register(id, { ...(id === 'o2' ? { vision: '꿈' } : {}), actions: acts('a', 'b', 'c') });
      clock.advance(1_000);
    }
    await service.setAction('o2', 'a', '완료');
    await service.setAction('o2', 'b', '진행');
    // a new registration of an old owner keeps its place
    await service.register('o1', { actions: acts('a') });
    const page = await service.list({ limit: 2, offset: 0 });
    expect(page.total).toBe(3);
    expect(page.owners.map((o) => o.ownerId)).toEqual(['o3', 'o2']);
    expect(page.owners[1]).toMatchObject({ vision: '꿈', points: 10, actions: { 대기: 1, 진행: 1, 완료: 1 } });
    expect('vision' in page.owners[0]!).toBe(false);
    expect((await service.list({ limit: 2, offset: 2 })).owners.map((o) => o.ownerId)).toEqual(['o1']);
    expect((await service.list({ limit: 2, offset: 2 })).owners[0]!.actions).toEqual({ 대기: 1, 진행: 0, 완료: 0 });
  });

  it('gives at least one and at most 100 owners a page', async () => {
    const { service, clock } = await setup();
    for (let i = 0; i < 102; i++) {
      await service.register(`o${i}`, { actions: [] });
      clock.advance(1);
    }
    expect((await service.list({ limit: 0, offset: 0 })).owners.map((o) => o.ownerId)).toEqual(['o101']);
    expect((await service.list({ limit: -5, offset: 1 })).owners.map((o) => o.ownerId)).toEqual(['o100']);
    expect((await service.list({ limit: 100, offset: 0 })).owners).toHaveLength(100);
    expect((await service.list({ limit: 101, offset: 0 })).owners).toHaveLength(100);
    expect((await service.list({ limit: 1000, offset: 0 })).total).toBe(102);
  });
});

describe('stored owners', () => {
  it('are indexed under coach:owners:{#p} (the partition of the owner) by registration time, once each', async () => {
    const { service, store, clock } = await setup();
    await service.register('o1', { actions: [] });
    clock.advance(10);
    await service.register('o2', { actions: [] });
    await service.register('o1', { actions: acts('a') });
    const owners = async (id: string) => store.indexRange(`coach:owners:{#${partitionOf(`coach:owner:${id}`)}}`);
    expect((await owners('o1')).filter((e) => e.member === 'o1')).toEqual([{ member: 'o1', score: T0 }]);
    expect((await owners('o2')).filter((e) => e.member === 'o2')).toEqual([{ member: 'o2', score: T0 + 10 }]);
    expect(await store.indexCount('coach:owners')).toBe(0);
  });

  it('listed in the index but gone are left out of a page (the total still counts them)', async () => {
    const { service, store, clock } = await setup();
    await service.register('o1', { actions: [] });
    clock.advance(10);
    await service.register('o2', { actions: [] });
    await store.update([], () => ({ writes: [{ op: 'del', key: 'coach:owner:o2' }], result: undefined }));
    const page = await service.list({ limit: 10, offset: 0 });
    expect(page.owners.map((o) => o.ownerId)).toEqual(['o1']);
    expect(page.total).toBe(2);
  });

  it('that are not an owner record are refused as corrupt, naming what they should be', async () => {
    const { service, store } = await setup();
    const bads: Json[] = [{ id: 'o1' }, { actions: [] }, { id: 7, actions: [] }, { id: 'o1', actions: 'x' }];
    for (const bad of bads) {
      await store.update([], () => ({ writes: [{ op: 'set', key: 'coach:owner:o1', value: bad }], result: undefined }));
      expect(await refusal(service.profile('o1')), JSON.stringify(bad)).toEqual({ status: 500, code: 'corrupt_record', message: 'a stored coaching owner is not readable' });
    }
  });
});

describe('the card of the day', () => {

  it('is 404 owner_not_found for an unknown owner', async () => {
    const { service } = await setup();
    expect(await refusal(service.nudge('nobody'))).toEqual({ status: 404, code: 'owner_not_found', message: 'no coaching owner nobody' });
  });

  it('is the first open action in phase order 티→옴→타→음 (the earliest listed within a phase), the same all day and the next days until it is done', async () => {
    const { service, clock } = await setup();
    const phased = [
      { id: 'eum', title: '회고', phase: '음' as const, reward: 10 },
      { id: 'om1', title: '읽기', phase: '옴' as const, reward: 10 },
      { id: 'ti1', title: '산책', phase: '티' as const, reward: 10 },
      { id: 'om2', title: '쓰기', phase: '옴' as const, reward: 10 },
      { id: 'ti2', title: '물 마시기', phase: '티' as const, reward: 10 },
    ];
    await service.register('o1', { actions: phased });
    for (let day = 0; day < 3; day++) {
      const n = await service.nudge('o1');
      expect(n?.date).toBe(new Date(T0 + day * 86_400_000 + 9 * 3_600_000).toISOString().slice(0, 10));
      expect(n?.action.id).toBe('ti1');
      clock.advance(9 * 3_600_000);
      expect((await service.nudge('o1'))?.action.id).toBe('ti1');
      clock.advance(15 * 3_600_000);
    }
    // another action done or started leaves the card alone; its own action done moves it on
    await service.setAction('o1', 'om2', '완료');
    await service.setAction('o1', 'eum', '진행');
    expect((await service.nudge('o1'))?.action.id).toBe('ti1');
    await service.setAction('o1', 'ti1', '완료');
    expect((await service.nudge('o1'))?.action.id).toBe('ti2');
    await service.setAction('o1', 'ti2', '완료');
    expect((await service.nudge('o1'))?.action.id).toBe('om1');
    await service.setAction('o1', 'om1', '완료');
    expect((await service.nudge('o1'))?.action.id).toBe('eum');
    await service.setAction('o1', 'eum', '완료');
    expect(await service.nudge('o1')).toBeUndefined();
  });

  it('uses the owner’s own date', async () => {
    const { service, clock } = await setup();
    clock.set(Date.parse('2026-03-10T20:00:00Z')); // 11 March in Seoul, 10 March in UTC
    await service.register('seoul', { actions: acts('a', 'b', 'c', 'd', 'e') });
    await service.register('utc', { timeZone: 'UTC', actions: acts('a', 'b', 'c', 'd', 'e') });
    expect((await service.nudge('seoul'))?.date).toBe('2026-03-11');
    const utc = await service.nudge('utc');
    expect(utc?.date).toBe('2026-03-10');
    expect(utc?.action.id).toBe('a');
  });

  it('says the vision with its particle, and the action and its reward', async () => {
    const { service } = await setup();
    await service.register('o1', { vision: '건강한 삶', actions: [{ id: 'a', title: '산책', phase: '티', reward: 30 }] });
    expect(await service.nudge('o1')).toStrictEqual({
      date: '2026-03-10',
      title: '오늘의 한 걸음',
      message: '"건강한 삶"을 향해, 오늘은 "산책"부터 해 볼까요? 완료하면 30점을 드려요.',
      vision: '건강한 삶',
      action: { id: 'a', title: '산책', phase: '티', reward: 30, status: '대기' },
    });
    await service.register('o1', { vision: '부자', actions: [{ id: 'a', title: '산책', phase: '티', reward: 30 }] });
    expect((await service.nudge('o1'))?.message).toBe('"부자"를 향해, 오늘은 "산책"부터 해 볼까요? 완료하면 30점을 드려요.');
    await service.register('o1', { actions: [{ id: 'a', title: '산책', phase: '티', reward: 30 }] });
    const plain = await service.nudge('o1');
    expect(plain?.message).toBe('오늘은 "산책"부터 해 볼까요? 완료하면 30점을 드려요.');
    expect('vision' in plain!).toBe(false);
  });

  it('is undefined when every action is done, or there is none', async () => {
    const { service } = await setup();
    await service.register('none', { actions: [] });
    expect(await service.nudge('none')).toBeUndefined();
    await service.register('o1', { actions: acts('a', 'b') });
    await service.setAction('o1', 'a', '완료');
    expect((await service.nudge('o1'))?.action.id).toBe('b');
    await service.setAction('o1', 'b', '완료');
    expect(await service.nudge('o1')).toBeUndefined();
  });
});

describe('setting an action’s status', () => {
  it('is 404 for an unknown owner or action', async () => {
    const { service } = await setup();
    expect(await refusal(service.setAction('x', 'a', '완료'))).toEqual({ status: 404, code: 'owner_not_found', message: 'no coaching owner x' });
    await service.register('o1', { actions: acts('a') });
    expect(await refusal(service.setAction('o1', 'zz', '완료'), { details: true })).toEqual({
      status: 404,
      code: 'action_not_found',
      message: 'owner o1 has no action zz',
      details: { actionId: 'zz' },
    });
  });

  it('pays the reward on the first 완료 only, dated in the owner’s time zone', async () => {
    const { service, clock, writes } = await setup();
    await service.register('o1', { timeZone: 'America/Los_Angeles', actions: acts('a', 'b') });
    clock.set(Date.parse('2026-03-11T03:00:00Z')); // 10 March in Los Angeles
    const paid = await service.setAction('o1', 'b', '완료');
    expect(paid).toStrictEqual({
      action: { id: 'b', title: '할 일 b', phase: '티', reward: 20, status: '완료', paidAt: '2026-03-11T03:00:00.000Z', completedOn: '2026-03-10' },
      rewarded: true,
      reward: 20,
      points: 20,
    });
    // the same call again: nothing changes, nothing is written
    writes.length = 0;
    clock.advance(86_400_000);
    expect(await service.setAction('o1', 'b', '완료')).toStrictEqual({ ...paid, rewarded: false });
    expect(writes).toEqual([]);
    // back to 진행 and done again: the reward stays paid once, with its first date
    const back = await service.setAction('o1', 'b', '진행');
    expect(back).toStrictEqual({ action: { ...paid.action, status: '진행' }, rewarded: false, reward: 20, points: 20 });
    expect(writes).toHaveLength(1);
    expect(await service.setAction('o1', 'b', '완료')).toStrictEqual({ ...paid, rewarded: false });
    expect((await service.profile('o1')).points).toBe(20);
    // another action adds its own reward
    expect((await service.setAction('o1', 'a', '완료')).points).toBe(30);
    expect((await service.profile('o1')).points).toBe(30);
  });

  it('sets 진행 without paying, idempotently, and keeps the other actions', async () => {
    const { service, clock, writes } = await setup();
    await service.register('o1', { actions: acts('a', 'b') });
    writes.length = 0;
    clock.advance(1_000);
    const r = await service.setAction('o1', 'a', '진행');
    expect(r).toStrictEqual({ action: { id: 'a', title: '할 일 a', phase: '티', reward: 10, status: '진행' }, rewarded: false, reward: 10, points: 0 });
    expect(writes).toHaveLength(1);
    await service.setAction('o1', 'a', '진행');
    expect(writes).toHaveLength(1);
    const p = await service.profile('o1');
    expect(p.actions.map((a) => a.status)).toEqual(['진행', '대기']);
    expect((await service.list({ limit: 1, offset: 0 })).owners[0]!.updatedAt).toBe(new Date(T0 + 1_000).toISOString());
  });
});
