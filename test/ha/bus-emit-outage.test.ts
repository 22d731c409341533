import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, EMIT_BACKLOG, type Bus, type BusMessage } from '../../src/bus.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { redisBinariesOrSkip, startRedisServer, type RedisServerProcess } from '../support/sentinel.js';
import { sleep, until } from '../support/wait.js';

// Bus.emit on a retained topic while Redis is out of reach: the messages wait (in order, behind one
// another) and are published once the Store is back, so a stream's subscribers miss none; a topic
// without history is not retried; past the retry time a message is dropped with a warning.

const binaries = redisBinariesOrSkip();

describe.skipIf(!binaries)('Bus.emit through a Store outage', () => {
  let redis: RedisServerProcess;
  let store: RedisStore;
  let bus: Bus;
  const warnings: string[] = [];
  beforeAll(async () => {
    redis = await startRedisServer();
    store = await openRedisStore({ url: redis.url, prefix: 'emit:', opTimeoutMs: 300 });
    bus = createBus(store, 'p1', { logger: { warn: (_o, msg) => warnings.push(msg) } });
    bus.retain('stream:*', { size: 1000 });
    await bus.start();
  }, 30_000);
  afterAll(async () => {
    await bus?.close();
    await store?.close();
    await redis?.kill();
  });

  it('emits of a retained topic made while Redis is down arrive after it is back, in order, none lost', async () => {
    const seen: BusMessage[] = [];
    bus.onMessage((m) => {
      if (m.topic === 'stream:a') seen.push(m);
    });
    bus.emit('stream:a', { n: 0 });
    await until('the first message', async () => seen.length === 1, 5_000, 10);

    await redis.kill('SIGKILL');
    for (let n = 1; n <= 20; n++) {
      bus.emit('stream:a', n % 2 ? { n } : Promise.resolve({ n }));
      await sleep(20);
    }
    bus.emit('live:x', { lost: true }); // no history: not retried
    await sleep(500);
    expect(seen.length).toBe(1);
    await redis.restart();
    await until('every message emitted during the outage', async () => seen.length === 21, 20_000, 50);
    expect(seen.map((m) => (m.message as { n: number }).n)).toEqual([...Array(21).keys()]);
    const offsets = seen.map((m) => m.offset!);
    expect(offsets).toEqual(offsets.map((_, i) => offsets[0]! + i));
    const h = await bus.history('stream:a', { offset: offsets[0]!, epoch: seen[0]!.epoch! });
    expect(h.recovered).toBe(true);
    expect(h.publications.map((p) => (p.message as { n: number }).n)).toEqual([...Array(20).keys()].map((i) => i + 1));
    expect(warnings).toContain('bus message not published'); // the live-only one
  }, 60_000);

  it('past the retry time a message is dropped with a warning, and the next one is published', async () => {
    const short = createBus(store, 'p2', { emitRetryMs: 400, logger: { warn: (_o, msg) => warnings.push(`short: ${msg}`) } });
    short.retain('stream:*', { size: 100 });
    const seen: number[] = [];
    short.onMessage((m) => seen.push((m.message as { n: number }).n));
    await redis.kill('SIGKILL');
    short.emit('stream:b', { n: 1 });
    await until('the drop warning', async () => warnings.includes('short: bus message not published'), 10_000, 20);
    await redis.restart();
    await until('the store is back', async () => (await store.get('nothing').then(() => true, () => false)), 20_000, 50);
    short.emit('stream:b', { n: 2 });
    await until('the next message', async () => seen.includes(2), 10_000, 20);
    expect(seen).toEqual([2]);
    await short.close();
  }, 60_000);

  it('at most EMIT_BACKLOG messages wait; after the retry time the queued ones are dropped at once', async () => {
    const drops: string[] = [];
    const small = createBus(store, 'p3', { emitRetryMs: 1000, logger: { warn: (o, msg) => drops.push(String((o as { err?: Error }).err?.message ?? msg)) } });
    small.retain('stream:*', { size: 100 });
    await redis.kill('SIGKILL');
    for (let n = 0; n < EMIT_BACKLOG; n++) small.emit(`stream:c${n % 10}`, { n });
    expect(drops).toEqual([]);
    small.emit('stream:c0', { n: 'one too many' });
    expect(drops).toEqual([`more than ${EMIT_BACKLOG} bus messages wait for the store`]);
    // every queued message runs out within a few op timeouts of the retry time, not one timeout each
    await until('every queued message dropped', async () => drops.length === EMIT_BACKLOG + 1, 15_000, 50);
    await redis.restart();
    await small.close();
  }, 60_000);
});
