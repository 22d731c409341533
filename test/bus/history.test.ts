import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBus, type BusMessage } from '../../src/bus.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { waitFor } from '../store/contract.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const dirs: string[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const lmdb = async () => {
  const dir = mkdtempSync(join(tmpdir(), 'maru-history-'));
  dirs.push(dir);
  return { dir, store: await openLmdbStore({ path: dir }) };
};

function historySuite(name: string, open: () => Promise<Store>) {
  describe(`Bus history on ${name}`, () => {
    it('numbers publications per topic, replays after an offset, and says when it cannot', async () => {
      const store = await open();
      const bus = createBus(store, 'h');
      bus.retain('keep', { size: 5 });
      bus.retain('room:*', { size: 3 });
      await bus.start();
      const got: BusMessage[] = [];
      bus.onMessage((m) => got.push(m));

      expect(await bus.publish('plain', { n: 0 })).toBe(0);
      const offsets = [];
      for (let n = 1; n <= 4; n++) offsets.push(await bus.publish('keep', { n }));
      expect(offsets).toEqual([1, 2, 3, 4]);
      expect(await bus.publish('room:a', 'x')).toBe(1);
      const { position } = await bus.history('keep');
      expect(position.offset).toBe(4);
      expect(position.epoch).toMatch(/^[0-9a-f]{8}$/);
      // live messages carry their position; plain ones do not
      expect(got.find((m) => m.topic === 'plain')).toEqual({ topic: 'plain', message: { n: 0 } });
      expect(got.find((m) => m.topic === 'keep')).toEqual({ topic: 'keep', message: { n: 1 }, offset: 1, epoch: position.epoch });

      const after2 = await bus.history('keep', { offset: 2, epoch: position.epoch });
      expect(after2.recovered).toBe(true);
      expect(after2.publications).toEqual([
        { offset: 3, message: { n: 3 } },
        { offset: 4, message: { n: 4 } },
      ]);
      expect(await bus.history('keep', { offset: 4, epoch: position.epoch })).toMatchObject({ recovered: true, publications: [] });
      expect(await bus.history('keep', { offset: 9, epoch: position.epoch })).toMatchObject({ recovered: false, reason: 'ahead' });
      expect(await bus.history('keep', { offset: 1, epoch: 'deadbeef' })).toMatchObject({ recovered: false, reason: 'epoch' });

      // past the cap the oldest are gone: a client at offset 1 cannot be made whole
      for (let n = 5; n <= 8; n++) await bus.publish('keep', { n });
      expect(await bus.history('keep', { offset: 1, epoch: position.epoch })).toMatchObject({ recovered: false, reason: 'gap', publications: [] });
      const tail = await bus.history('keep', { offset: 3, epoch: position.epoch });
      expect(tail.recovered).toBe(true);
      expect(tail.publications.map((p) => p.offset)).toEqual([4, 5, 6, 7, 8]);

      // the history is lost (the store forgot it): the next publication opens a new epoch
      await store.del('bus:h:{keep}');
      expect(await bus.publish('keep', { n: 'new' })).toBe(1);
      const fresh = await bus.history('keep', { offset: 8, epoch: position.epoch });
      expect(fresh).toMatchObject({ recovered: false, reason: 'epoch' });
      expect(fresh.position.epoch).not.toBe(position.epoch);
      await bus.close();
      await store.close();
    });

    it('gives concurrent publishers distinct consecutive offsets', async () => {
      const store = await open();
      const a = createBus(store, 'a');
      const b = createBus(store, 'b');
      a.retain('race', { size: 100 });
      b.retain('race', { size: 100 });
      const all = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).publish('race', i)));
      expect([...all].sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      const h = await a.history('race', { offset: 0, epoch: (await a.history('race')).position.epoch });
      expect(h.publications.map((p) => p.offset)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      await store.close();
    });

    it('publishMany appends in one write with consecutive offsets, interleaved safely with publish', async () => {
      const store = await open();
      const a = createBus(store, 'a');
      const b = createBus(store, 'b');
      for (const bus of [a, b]) bus.retain('batch', { size: 100 });
      const got: BusMessage[] = [];
      a.onMessage((m) => got.push(m));
      const [many, one, more] = await Promise.all([a.publishMany('batch', ['x', 'y', 'z']), b.publish('batch', 'w'), a.publishMany('batch', [])]);
      expect(more).toEqual([]);
      expect([...many, one].sort((x, y) => x - y)).toEqual([1, 2, 3, 4]);
      expect(many[1]! - many[0]!).toBe(1);
      expect(many[2]! - many[1]!).toBe(1);
      expect(got.map((m) => [m.message, m.offset])).toEqual([['x', many[0]], ['y', many[1]], ['z', many[2]]]);
      const h = await a.history('batch', { offset: 0, epoch: (await a.history('batch')).position.epoch });
      expect(h.publications.filter((p) => p.message !== 'w').map((p) => p.message)).toEqual(['x', 'y', 'z']);
      await store.close();
    });
  });
}

historySuite('LMDB', async () => (await lmdb()).store);
historySuite('Redis', async () => {
  const prefix = uniquePrefix('history');
  prefixes.push(prefix);
  return openRedisStore({ url: redis.url, prefix });
});

describe('Bus history across processes and restarts', () => {
  it('keeps its epoch when an LMDB store is reopened, so a position stays valid', async () => {
    const { dir, store } = await lmdb();
    const bus = createBus(store, 'one');
    bus.retain('t', { size: 10 });
    await bus.publish('t', 1);
    await bus.publish('t', 2);
    const { position } = await bus.history('t');
    await store.close();
    const again = await openLmdbStore({ path: dir });
    const bus2 = createBus(again, 'two');
    bus2.retain('t', { size: 10 });
    await bus2.publish('t', 3);
    const h = await bus2.history('t', position);
    expect(h).toMatchObject({ recovered: true, publications: [{ offset: 3, message: 3 }] });
    await again.close();
  });

  it('carries offset and epoch to another process on Redis', async () => {
    const prefix = uniquePrefix('history-x');
    prefixes.push(prefix);
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    const b1 = createBus(s1, 'p1');
    const b2 = createBus(s2, 'p2');
    for (const b of [b1, b2]) b.retain('x', { size: 10 });
    await b1.start();
    await b2.start();
    await b2.follow('x');
    const got: BusMessage[] = [];
    b2.onMessage((m) => got.push(m));
    const offset = await b1.publish('x', { hello: 1 });
    await waitFor(() => got.length === 1, 3000, 'message on the other process');
    const { position } = await b2.history('x');
    expect(got[0]).toEqual({ topic: 'x', message: { hello: 1 }, offset, epoch: position.epoch });
    await b1.close();
    await b2.close();
    await s1.close();
    await s2.close();
  });

  it('emit logs a failed publication instead of throwing', async () => {
    const { store } = await lmdb();
    const warned: unknown[] = [];
    const bus = createBus(store, 'e', { logger: { warn: (obj) => void warned.push(obj) } });
    bus.retain('t', { size: 2 });
    await store.close();
    expect(() => bus.emit('t', { lost: true })).not.toThrow();
    bus.emit('t', Promise.reject(new Error('no message')));
    await waitFor(() => warned.length === 2, 3000, 'two warnings');
    expect(warned).toEqual([expect.objectContaining({ topic: 't' }), expect.objectContaining({ topic: 't' })]);
  });
});
