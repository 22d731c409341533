import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBus, topicChannel, type BusMessage } from '../src/bus.js';
import { AppError } from '../src/errors.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import type { Store } from '../src/store/port.js';
import { openRedisStore } from '../src/store/redis.js';
import { waitFor } from './store/contract.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from './support/redis.js';

const redis = await redisOrSkip();
const dirs: string[] = [];
const prefixes: string[] = [];

afterAll(async () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const count = (msgs: BusMessage[], message: unknown) =>
  msgs.filter((m) => JSON.stringify(m.message) === JSON.stringify(message)).length;

/** Resolves once `store` has dispatched a raw bus message of topic `t` carrying `marker` to its handlers. */
async function seenOnChannel(store: Store, publish: () => Promise<unknown>, marker: string): Promise<void> {
  let seen = false;
  const unsub = await store.subscribe(topicChannel('t'), (raw) => {
    if (raw.includes(marker)) seen = true;
  });
  await publish();
  await waitFor(() => seen, 3000, `bus marker ${marker}`);
  await unsub();
}

describe('Bus over LMDB', () => {
  it('delivers locally exactly once, and to another bus on the same store exactly once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'maru-bus-'));
    dirs.push(dir);
    const store = await openLmdbStore({ path: dir });
    const a = createBus(store, 'a');
    const b = createBus(store, 'b');
    await a.start();
    await b.start();
    await b.follow('room:1');
    const gotA: BusMessage[] = [];
    const gotB: BusMessage[] = [];
    a.onMessage((m) => gotA.push(m));
    const offB = b.onMessage((m) => gotB.push(m));
    a.onMessage(() => {
      throw new Error('faulty subscriber');
    });

    // b's other handler sees everything b receives: once it has a later marker, every earlier
    // delivery has happened (no sleeping to let duplicates arrive)
    const seenByB: BusMessage[] = [];
    b.onMessage((m) => seenByB.push(m));

    await a.publish('room:1', { n: 1 });
    expect(gotA).toEqual([{ topic: 'room:1', message: { n: 1 } }]);
    await a.publish('room:1', 'marker-1');
    await waitFor(() => count(seenByB, 'marker-1') === 1, 3000, 'marker at b');
    expect(count(gotA, { n: 1 })).toBe(1);
    expect(gotB).toEqual([
      { topic: 'room:1', message: { n: 1 } },
      { topic: 'room:1', message: 'marker-1' },
    ]);

    offB();
    await a.publish('room:1', { n: 2 });
    await waitFor(() => count(seenByB, { n: 2 }) === 1, 3000, 'n=2 at b');
    expect(gotB).toHaveLength(2);
    expect(count(gotA, { n: 2 })).toBe(1);

    await a.close();
    await b.close();
    await store.close();
  });
});

describe('Bus.emit on a topic with a history', () => {
  it('a burst of emits is written in batches, every message once, in the order emitted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'maru-bus-emit-'));
    dirs.push(dir);
    const store = await openLmdbStore({ path: dir });
    const a = createBus(store, 'a');
    a.retain('feed', { size: 5000 });
    let writes = 0;
    const counting = new Proxy(store, {
      get(target, prop, recv) {
        if (prop === 'update') writes++;
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const b = createBus(counting, 'b');
    b.retain('feed', { size: 5000 });
    const got: BusMessage[] = [];
    b.onMessage((m) => got.push(m));
    const N = 3000;
    for (let n = 0; n < N; n++) b.emit('feed', n % 3 ? { n } : Promise.resolve({ n }));
    await waitFor(() => got.length === N, 20_000, 'every emit delivered');
    expect(got.map((m) => (m.message as { n: number }).n)).toEqual([...Array(N).keys()]);
    expect(got.map((m) => m.offset)).toEqual(got.map((_, i) => got[0]!.offset! + i));
    // batched: far fewer store writes than messages (one per message would be 3000)
    expect(writes).toBeLessThanOrEqual(N / 10);
    const h = await a.history('feed', { offset: got[0]!.offset! - 1, epoch: got[0]!.epoch! });
    expect(h.publications).toHaveLength(N);
    await a.close();
    await b.close();
    await store.close();
  });
});

describe.runIf(redis.available)('Bus over Redis', () => {
  it('two processes: each message reaches the other exactly once and its publisher exactly once', async () => {
    const prefix = uniquePrefix('bus');
    prefixes.push(prefix);
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    const bus1 = createBus(s1, 'origin-1');
    const bus2 = createBus(s2, 'origin-2');
    await bus1.start();
    await bus2.start();
    await bus1.follow('t');
    await bus2.follow('t');
    const got1: BusMessage[] = [];
    const got2: BusMessage[] = [];
    bus1.onMessage((m) => got1.push(m));
    bus2.onMessage((m) => got2.push(m));

    await bus1.publish('t', { from: 1 });
    expect(count(got1, { from: 1 })).toBe(1);
    // A later marker from the same publisher arrives after the message on both connections.
    await seenOnChannel(s1, () => bus1.publish('t', 'marker-1'), 'marker-1');
    await waitFor(() => count(got2, 'marker-1') === 1, 3000, 'marker on bus2');
    expect(count(got1, { from: 1 })).toBe(1);
    expect(count(got2, { from: 1 })).toBe(1);

    await bus2.publish('t', { from: 2 });
    await seenOnChannel(s2, () => bus2.publish('t', 'marker-2'), 'marker-2');
    await waitFor(() => count(got1, 'marker-2') === 1, 3000, 'marker on bus1');
    expect(count(got1, { from: 2 })).toBe(1);
    expect(count(got2, { from: 2 })).toBe(1);
    expect(got1.map((m) => m.message)).toEqual([{ from: 1 }, 'marker-1', { from: 2 }, 'marker-2']);
    expect(got2.map((m) => m.message)).toEqual([{ from: 1 }, 'marker-1', { from: 2 }, 'marker-2']);

    await bus2.close();
    await bus1.publish('t', 'after close');
    // the marker reaching s2's connection means 'after close' reached it before: a bus2 still
    // listening would have dispatched it by then
    await seenOnChannel(s2, () => bus1.publish('t', 'marker-3'), 'marker-3');
    expect(count(got2, 'after close')).toBe(0);

    await bus1.close();
    await s1.close();
    await s2.close();
  });

  it('buses on different prefixes do not hear each other', async () => {
    const pa = uniquePrefix('bus-a');
    const pb = uniquePrefix('bus-b');
    prefixes.push(pa, pb);
    const sa = await openRedisStore({ url: redis.url, prefix: pa });
    const sb = await openRedisStore({ url: redis.url, prefix: pb });
    const a = createBus(sa, 'a');
    const b = createBus(sb, 'b');
    await a.start();
    await b.start();
    await b.follow('t');
    const gotB: BusMessage[] = [];
    b.onMessage((m) => gotB.push(m));
    await a.publish('t', 'for a only');
    await seenOnChannel(sa, () => a.publish('t', 'marker'), 'marker');
    // a later message of a third bus on b's prefix reaches b through b's connection: a's earlier
    // messages would have reached that connection first
    const c = createBus(sb, 'c');
    await c.start();
    await c.publish('t', 'c-marker');
    await waitFor(() => count(gotB, 'c-marker') === 1, 3000, 'c-marker at b');
    expect(gotB.map((m) => m.message)).toEqual(['c-marker']);
    await c.close();
    await a.close();
    await b.close();
    await sa.close();
    await sb.close();
  });
});

describe('Bus: a retained topic is announced by its history append', () => {
  it('the append and the announcement are one update: no separate publish can fail after the history holds the message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'maru-bus-notify-'));
    dirs.push(dir);
    const store = await openLmdbStore({ path: dir });
    // a store whose plain publish is out of reach: a retained topic does not need it
    const flaky = new Proxy(store, {
      get(target, prop, recv) {
        if (prop === 'publish') {
          return async () => {
            throw new AppError('unavailable', 'store_unavailable', 'the store is out of reach');
          };
        }
        const v = Reflect.get(target, prop, recv);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const warned: string[] = [];
    const bus = createBus(flaky, 'door', { logger: { warn: (_o, msg) => warned.push(msg) } });
    const other = createBus(store, 'other');
    for (const b of [bus, other]) b.retain('checkins', { size: 100 });
    await bus.start();
    await other.start();
    await other.follow('checkins');
    const got: BusMessage[] = [];
    const there: BusMessage[] = [];
    bus.onMessage((m) => got.push(m));
    other.onMessage((m) => there.push(m));
    bus.emit('checkins', { seat: 'D-0' });
    bus.emit('checkins', { seat: 'D-1' });
    await waitFor(() => got.length === 2 && there.length === 2, 5_000, 'the check-ins delivered here and there');
    expect(got.map((m) => [m.message, m.offset])).toEqual([
      [{ seat: 'D-0' }, 1],
      [{ seat: 'D-1' }, 2],
    ]);
    expect(there).toEqual(got);
    const h = await bus.history('checkins', { offset: 0, epoch: got[0]!.epoch! });
    expect(h.publications.map((p) => p.message)).toEqual([{ seat: 'D-0' }, { seat: 'D-1' }]);
    expect(warned).toEqual([]);
    await bus.close();
    await other.close();
    await store.close();
  });
});
