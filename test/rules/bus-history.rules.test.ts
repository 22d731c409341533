import { afterAll, describe, expect, it, vi } from 'vitest';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The Bus's topic history (src/bus/history.ts): per topic a stream of publications numbered 1, 2,
// 3... inside a random epoch, capped to the topic's retention; a lost stream starts a new epoch; a
// recovery after a position says what it got, or why not (another epoch, ahead of the head, a gap
// past the cap). Which topics keep a history: exact names, or prefixes ending in '*', 1 to 10,000
// publications each. Real LMDB store in a temp dir; the module is loaded afresh per test.
const load = async () => {
  vi.resetModules();
  return import('../../src/bus/history.js');
};
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
async function setup() {
  const mod = await load();
  const store = await openLmdbStore({ path: tempDir('history-rules') });
  stores.push(store);
  return { ...mod, store, h: new mod.TopicHistory(store) };
}
const EPOCH = /^[0-9a-f]{8}$/;

describe('the retention table', () => {
  it('takes sizes from 1 to 10,000 whole publications only', async () => {
    const { RetentionTable, MAX_HISTORY } = await load();
    expect(MAX_HISTORY).toBe(10_000);
    const t = new RetentionTable();
    t.set('a', { size: 1 });
    t.set('b', { size: 10_000 });
    expect([t.get('a'), t.get('b')]).toEqual([{ size: 1 }, { size: 10_000 }]);
    for (const size of [0, -1, 10_001, 1.5, Number.NaN]) {
      expect(() => t.set('c', { size }), String(size)).toThrow(new RangeError('history size must be an integer in 1..10000'));
    }
    expect(t.get('c')).toBeUndefined();
  });

  it('matches exact names before prefixes, and the first prefix set that fits', async () => {
    const { RetentionTable } = await load();
    const t = new RetentionTable();
    t.set('chat:*', { size: 10 });
    t.set('chat:room:*', { size: 20 });
    t.set('chat:room:1', { size: 30 });
    t.set('other', { size: 40 });
    expect(t.get('chat:room:1')).toEqual({ size: 30 });
    expect(t.get('chat:room:2')).toEqual({ size: 10 });
    expect(t.get('chat:')).toEqual({ size: 10 });
    expect(t.get('chat')).toBeUndefined();
    expect(t.get('other')).toEqual({ size: 40 });
    expect(t.get('other:x')).toBeUndefined();
    expect(t.get('xchat:a')).toBeUndefined();
    expect(t.get('Status')).toBeUndefined();
    expect(new RetentionTable().get('S')).toBeUndefined();
    // a lone '*' keeps every topic; an exact name is not a prefix
    t.set('*', { size: 5 });
    expect(t.get('anything')).toEqual({ size: 5 });
  });
});

describe('appending', () => {
  it('numbers publications 1, 2, 3 in one epoch per topic', async () => {
    const { h } = await setup();
    const a1 = await h.append('t', { n: 1 }, 10);
    const a2 = await h.append('t', { n: 2 }, 10);
    const b1 = await h.append('u', 'x', 10);
    expect(a1.epoch).toMatch(EPOCH);
    expect([a1.offset, a2.offset, b1.offset]).toEqual([1, 2, 1]);
    expect(a2.epoch).toBe(a1.epoch);
    expect(b1.epoch).not.toBe(a1.epoch);
    expect(await h.position('t')).toEqual({ offset: 2, epoch: a1.epoch });
  });

  it('appends many in order, in the same numbering, and none changes nothing', async () => {
    const { h } = await setup();
    const first = await h.append('t', 0, 10);
    const many = await h.appendMany('t', ['a', 'b', 'c'], 10);
    expect(many).toEqual([2, 3, 4].map((offset) => ({ offset, epoch: first.epoch })));
    expect(await h.appendMany('t', [], 10)).toEqual([]);
    expect(await h.position('t')).toEqual({ offset: 4, epoch: first.epoch });
    expect((await h.since('t', { offset: 1, epoch: first.epoch })).publications).toEqual([
      { offset: 2, message: 'a' },
      { offset: 3, message: 'b' },
      { offset: 4, message: 'c' },
    ]);
    // a first write by appendMany makes the epoch
    const fresh = await h.appendMany('v', [1, 2], 10);
    expect(fresh.map((p) => p.offset)).toEqual([1, 2]);
    expect(fresh[0]!.epoch).toMatch(EPOCH);
    expect(fresh[1]!.epoch).toBe(fresh[0]!.epoch);
  });

  it('keeps only the retained number of publications', async () => {
    const { h, store } = await setup();
    for (let i = 1; i <= 5; i++) await h.append('t', i, 3);
    expect(await store.range('bus:h:{t}')).toEqual([
      { o: 3, m: 3 },
      { o: 4, m: 4 },
      { o: 5, m: 5 },
    ]);
    await h.appendMany('m', [1, 2, 3, 4], 2);
    expect((await store.range('bus:h:{m}')).map((e) => (e as { o: number }).o)).toEqual([3, 4]);
  });

  it('starts a new epoch at offset 1 when the store lost the stream', async () => {
    const { h, store } = await setup();
    const old = await h.append('t', 1, 10);
    await h.append('t', 2, 10);
    await store.update([], () => ({ writes: [{ op: 'del', key: 'bus:h:{t}' }], result: undefined }));
    const next = await h.append('t', 3, 10);
    expect(next.offset).toBe(1);
    expect(next.epoch).toMatch(EPOCH);
    expect(next.epoch).not.toBe(old.epoch);
    const r = await h.since('t', { offset: 2, epoch: old.epoch });
    expect(r).toEqual({ position: next, publications: [], recovered: false, reason: 'epoch' });
  });
});

describe('the position', () => {
  it('of a topic never written is offset 0 in an epoch given now and kept', async () => {
    const { h } = await setup();
    const p = await h.position('t');
    expect(p.offset).toBe(0);
    expect(p.epoch).toMatch(EPOCH);
    expect(await h.position('t')).toEqual(p);
    expect(await h.append('t', 'm', 10)).toEqual({ offset: 1, epoch: p.epoch });
  });

  it('of a stream another process started meanwhile is that one', async () => {
    const { h, store } = await setup();
    // the head appears between the read and the update
    const racing = new Proxy(store, {
      get(target, prop) {
        if (prop === 'update') {
          return async (keys: string[], fn: Parameters<Store['update']>[1]) => {
            await target.update([], () => ({ writes: [{ op: 'set', key: 'bus:h:{t}', value: { e: 'cafebabe', o: 7 } }], result: undefined }));
            return target.update(keys, fn);
          };
        }
        const v = (target as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const { TopicHistory } = await load();
    expect(await new TopicHistory(racing).position('t')).toEqual({ offset: 7, epoch: 'cafebabe' });
    expect(await h.position('t')).toEqual({ offset: 7, epoch: 'cafebabe' });
  });

  it('replaces a stored value that is no head', async () => {
    const { h, store } = await setup();
    for (const bad of [[1, 2], 'x', null, { e: 1, o: 1 }, { e: 'a', o: '1' }, { e: 'a' }] as Json[]) {
      await store.update([], () => ({ writes: [{ op: 'set', key: 'bus:h:{t}', value: bad }], result: undefined }));
      const p = await h.position('t');
      expect(p.offset, JSON.stringify(bad)).toBe(0);
      expect(p.epoch).toMatch(EPOCH);
      await store.update([], () => ({ writes: [{ op: 'set', key: 'bus:h:{t}', value: bad }], result: undefined }));
      expect((await h.append('t', 1, 5)).offset, JSON.stringify(bad)).toBe(1);
    }
  });
});

describe('recovery after a position', () => {
  it('without a position gives the head and nothing else', async () => {
    const { h } = await setup();
    const p = await h.append('t', 1, 10);
    expect(await h.since('t')).toEqual({ position: p, publications: [], recovered: true });
  });

  it('gives everything after the position, or nothing at the head', async () => {
    const { h } = await setup();
    const ps = await h.appendMany('t', ['a', 'b', 'c'], 10);
    const epoch = ps[0]!.epoch;
    expect(await h.since('t', { offset: 0, epoch })).toEqual({
      position: ps[2],
      publications: [
        { offset: 1, message: 'a' },
        { offset: 2, message: 'b' },
        { offset: 3, message: 'c' },
      ],
      recovered: true,
    });
    expect(await h.since('t', { offset: 2, epoch })).toEqual({ position: ps[2], publications: [{ offset: 3, message: 'c' }], recovered: true });
    expect(await h.since('t', { offset: 3, epoch })).toEqual({ position: ps[2], publications: [], recovered: true });
  });

  it('says why it cannot: another epoch, a position ahead, or a gap past the cap', async () => {
    const { h } = await setup();
    for (let i = 1; i <= 6; i++) await h.append('t', i, 3);
    const position = await h.position('t');
    const { epoch } = position;
    expect(await h.since('t', { offset: 1, epoch: 'deadbeef' })).toEqual({ position, publications: [], recovered: false, reason: 'epoch' });
    expect(await h.since('t', { offset: 6, epoch: 'deadbeef' })).toEqual({ position, publications: [], recovered: false, reason: 'epoch' });
    expect(await h.since('t', { offset: 7, epoch })).toEqual({ position, publications: [], recovered: false, reason: 'ahead' });
    // 4, 5, 6 are kept: after 3 is whole, after 2 misses 3
    expect((await h.since('t', { offset: 3, epoch })).recovered).toBe(true);
    expect((await h.since('t', { offset: 3, epoch })).publications.map((p) => p.offset)).toEqual([4, 5, 6]);
    expect(await h.since('t', { offset: 2, epoch })).toEqual({ position, publications: [], recovered: false, reason: 'gap' });
    expect(await h.since('t', { offset: 0, epoch })).toEqual({ position, publications: [], recovered: false, reason: 'gap' });
  });

  it('skips list entries that are no publication', async () => {
    const { h, store } = await setup();
    const p1 = await h.append('t', 'a', 10);
    const junk: Json[] = [{ x: 1 }, [2], { o: 9 }, null, 'm', { m: 'no offset' }];
    await store.update([], () => ({ writes: junk.map((value) => ({ op: 'push' as const, key: 'bus:h:{t}', value, cap: 10 })), result: undefined }));
    await h.append('t', 'b', 10);
    expect((await h.since('t', { offset: 0, epoch: p1.epoch })).publications).toEqual([
      { offset: 1, message: 'a' },
      { offset: 2, message: 'b' },
    ]);
  });

  it('moves the head it answers to the last publication read when more came meanwhile', async () => {
    const { h, store, TopicHistory } = await setup();
    const ps = await h.appendMany('t', ['a', 'b'], 10);
    let once = true;
    const racing = new Proxy(store, {
      get(target, prop) {
        if (prop === 'range') {
          return async (...a: unknown[]) => {
            if (once) {
              once = false;
              await h.append('t', 'c', 10);
            }
            return (target.range as (...x: unknown[]) => Promise<unknown>)(...a);
          };
        }
        const v = (target as unknown as Record<string | symbol, unknown>)[prop];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const r = await new TopicHistory(racing).since('t', { offset: 1, epoch: ps[0]!.epoch });
    expect(r).toEqual({
      position: { offset: 3, epoch: ps[0]!.epoch },
      publications: [
        { offset: 2, message: 'b' },
        { offset: 3, message: 'c' },
      ],
      recovered: true,
    });
  });
});
