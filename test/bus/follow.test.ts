import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { BUS_CHANNELS, createBus, topicPartition, type Bus, type BusMessage } from '../../src/bus.js';
import { Hub } from '../../src/hub/index.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { sleep, waitFor } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

// Each process subscribes only to the bus channels of the partitions whose topics it follows
// (docs/partitions.md): a follow subscribes its topic's partition before it resolves, follows of
// one partition share a subscription, and the last release unsubscribes it after the linger. Two
// hubs on one Redis (each its own store connections and bus, as two processes): a client on hub A
// hears what hub B publishes, A holds only the partitions its clients follow, and lets them go
// once they leave. The counts are Redis's own (PUBSUB NUMSUB).

const redis = await redisOrSkip();
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

/** Topics of distinct partitions, and two topics sharing one. */
function topicsByPartition(n: number): string[] {
  const seen = new Map<number, string>();
  for (let i = 0; seen.size < n; i++) {
    const t = `feed:${i}`;
    if (!seen.has(topicPartition(t))) seen.set(topicPartition(t), t);
  }
  return [...seen.values()];
}
function sameP(topic: string): string {
  for (let i = 0; ; i++) {
    const t = `other:${i}`;
    if (topicPartition(t) === topicPartition(topic)) return t;
  }
}

/** Subscribers Redis counts on each bus channel of a store, by partition (only those with any). */
async function numsub(admin: Redis, store: RedisStore): Promise<Map<number, number>> {
  const names = BUS_CHANNELS.map((c) => store.channel(c).name);
  const flat = (await admin.call('PUBSUB', 'NUMSUB', ...names)) as (string | number)[];
  const out = new Map<number, number>();
  for (let i = 0; i < BUS_CHANNELS.length; i++) {
    const n = Number(flat[i * 2 + 1]);
    if (n > 0) out.set(i, n);
  }
  return out;
}

describe.runIf(redis.available)('Bus.follow on one Redis', () => {
  it('subscribes only the followed partitions, shares one subscription per partition, and unsubscribes after the linger', async () => {
    const prefix = uniquePrefix('bus-follow');
    prefixes.push(prefix);
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    const admin = new Redis(redis.url);
    const a = createBus(s1, 'a', { lingerMs: 300 });
    const b = createBus(s2, 'b');
    try {
      await a.start();
      await b.start();
      // started, following nothing: no subscription at all
      expect(a.subscribed()).toEqual([]);
      expect(await numsub(admin, s1)).toEqual(new Map());

      const [t1, t2] = topicsByPartition(2) as [string, string];
      const t1b = sameP(t1);
      const got: BusMessage[] = [];
      a.onMessage((m) => got.push(m));
      const r1 = await a.follow(t1);
      const r1b = await a.follow(t1b);
      const r2 = await a.follow(t2);
      const p1 = topicPartition(t1);
      const p2 = topicPartition(t2);
      expect(a.subscribed()).toEqual([p1, p2].sort((x, y) => x - y));
      expect(await numsub(admin, s1)).toEqual(new Map([[p1, 1], [p2, 1]].sort((x, y) => x[0]! - y[0]!) as [number, number][]));

      // a message of b on a followed topic reaches a; on a topic of a partition a does not follow, not
      const [unfollowed] = topicsByPartition(3).filter((t) => ![p1, p2].includes(topicPartition(t)));
      await b.publish(unfollowed!, 'not heard');
      await b.publish(t1b, 'heard');
      await waitFor(() => got.length === 1, 3000, 'the message on the followed partition');
      expect(got).toEqual([{ topic: t1b, message: 'heard' }]);

      // one of two follows of p1 released: still subscribed; both: subscribed for the linger, then not
      r1();
      r1(); // a second call of a release does nothing
      expect(a.subscribed()).toEqual([p1, p2].sort((x, y) => x - y));
      r1b();
      await sleep(100);
      expect(a.subscribed()).toContain(p1);
      expect((await numsub(admin, s1)).get(p1)).toBe(1);
      await waitFor(async () => !(await numsub(admin, s1)).has(p1), 3000, 'p1 unsubscribed after the linger');
      expect(a.subscribed()).toEqual([p2]);

      // a follow within the linger keeps the subscription: no unsubscribe, no second subscription
      r2();
      await sleep(100);
      const again = await a.follow(t2);
      await sleep(400);
      expect(a.subscribed()).toEqual([p2]);
      expect((await numsub(admin, s1)).get(p2)).toBe(1);
      again();
    } finally {
      admin.disconnect();
      await a.close();
      await b.close();
      await s1.close();
      await s2.close();
    }
  });

  it('a partition let go and followed again at once delivers each message once', async () => {
    const prefix = uniquePrefix('bus-refollow');
    prefixes.push(prefix);
    const s1 = await openRedisStore({ url: redis.url, prefix });
    const s2 = await openRedisStore({ url: redis.url, prefix });
    const a = createBus(s1, 'a', { lingerMs: 0 });
    const b = createBus(s2, 'b');
    try {
      const got: BusMessage[] = [];
      a.onMessage((m) => got.push(m));
      for (let round = 0; round < 20; round++) {
        const release = await a.follow('t');
        if (round % 2 === 0) await sleep(5); // the linger (0) runs out: unsubscribe and subscribe overlap
        release();
      }
      await a.follow('t');
      await b.publish('t', 'once');
      await b.publish('t', 'marker');
      await waitFor(() => got.some((m) => m.message === 'marker'), 3000, 'the marker at a');
      expect(got.map((m) => m.message)).toEqual(['once', 'marker']);
      expect(a.subscribed()).toEqual([topicPartition('t')]);
    } finally {
      await a.close();
      await b.close();
      await s1.close();
      await s2.close();
    }
  });

  it('Redis subscriptions per process for N topics followed: one per distinct partition, at most 64', async () => {
    const prefix = uniquePrefix('bus-count');
    prefixes.push(prefix);
    const store = await openRedisStore({ url: redis.url, prefix });
    const admin = new Redis(redis.url);
    const bus = createBus(store, 'count', { lingerMs: 0 });
    const rows: string[] = [];
    try {
      for (const n of [0, 1, 4, 16, 64, 256, 1024]) {
        const topics = Array.from({ length: n }, (_, i) => `doc:${i}`);
        const releases = await Promise.all(topics.map((t) => bus.follow(t)));
        const expected = new Set(topics.map(topicPartition)).size;
        const counted = (await numsub(admin, store)).size;
        expect(bus.subscribed()).toHaveLength(expected);
        expect(counted).toBe(expected);
        rows.push(`${n} topics: ${counted} subscriptions`);
        releases.forEach((r) => r());
        await waitFor(async () => (await numsub(admin, store)).size === 0, 3000, 'all let go');
      }
      console.log(`bus subscriptions per process (one Redis): ${rows.join('; ')}`);
    } finally {
      admin.disconnect();
      await bus.close();
      await store.close();
    }
  });
});

describe.runIf(redis.available)('two hubs on one Redis', () => {
  it('a client on hub A hears a message published on hub B; A holds only the partitions its clients follow, and lets them go after they leave', async () => {
    const prefix = uniquePrefix('bus-hubs');
    prefixes.push(prefix);
    const admin = new Redis(redis.url);
    const hubs: { hub: Hub; bus: Bus; store: RedisStore; url: string }[] = [];
    try {
      for (const name of ['A', 'B']) {
        const store = await openRedisStore({ url: redis.url, prefix });
        const bus = createBus(store, `hub-${name}`, { lingerMs: 200 });
        const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: mkdtempSync(join(tmpdir(), 'maru-web-')), shutdownGraceMs: 500, sse: { heartbeatMs: 60_000 } });
        hub.attachBus(bus);
        hub.topic({ name: 'kept:*', policy: 'close', history: 100 });
        hub.topic({ name: 'live:*', policy: 'drop' });
        hub.sse({ path: '/stream', topics: ['kept:sse'], history: 100 });
        await bus.start();
        hubs.push({ hub, bus, store, url: `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}` });
      }
      const [A, B] = hubs as [(typeof hubs)[0], (typeof hubs)[0]];
      expect(A.bus.subscribed()).toEqual([]);

      const client = await connectTopics(A.url);
      const kept = 'kept:1';
      const live = topicsByPartition(64).map((t) => `live:${t}`).find((t) => topicPartition(t) !== topicPartition(kept))!;
      await client.subscribe(kept);
      await client.subscribe(live);
      const followed = [topicPartition(kept), topicPartition(live)].sort((x, y) => x - y);
      expect(A.bus.subscribed()).toEqual(followed);
      expect([...(await numsub(admin, A.store)).keys()]).toEqual(followed);
      // B has no client: it subscribes to nothing (its own publications need no subscription)
      expect(B.bus.subscribed()).toEqual([]);

      await B.bus.publish(kept, { n: 1 });
      await B.bus.publish(live, { n: 2 });
      const frames = [await client.next(), await client.next()];
      expect(frames).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'message', topic: kept, data: { n: 1 }, offset: 1 }),
          { type: 'message', topic: live, data: { n: 2 } },
        ]),
      );

      // an SSE client on A follows its stream's topic while it is open
      const abort = new AbortController();
      const res = await fetch(`${A.url}/stream`, { signal: abort.signal });
      expect(res.status).toBe(200);
      await waitFor(() => A.bus.subscribed().includes(topicPartition('kept:sse')), 3000, 'the stream topic followed');
      const reader = res.body!.getReader();
      let text = '';
      // the stream's position comes once its history is read: what B publishes after it is live
      while (!text.includes('id:')) text += new TextDecoder().decode((await reader.read()).value);
      await B.bus.publish('kept:sse', { n: 3 });
      const until = Date.now() + 5000;
      while (!text.includes('"n":3') && Date.now() < until) {
        const chunk = await Promise.race([reader.read(), sleep(500).then(() => undefined)]);
        if (chunk?.value) text += new TextDecoder().decode(chunk.value);
      }
      expect(text).toContain('"n":3');

      // unsubscribing one topic lets its partition go after the linger; closing the rest does too
      client.ws.send(JSON.stringify({ type: 'unsubscribe', topic: live }));
      expect((await client.next()).type).toBe('unsubscribed');
      await waitFor(() => !A.bus.subscribed().includes(topicPartition(live)) || topicPartition(live) === topicPartition('kept:sse'), 3000, 'the live topic let go');
      client.close();
      abort.abort();
      await waitFor(() => A.bus.subscribed().length === 0, 5000, `every partition let go (still ${A.bus.subscribed()})`);
      await waitFor(async () => (await numsub(admin, A.store)).size === 0, 3000, 'Redis counts no subscriber of A');
      expect(A.hub.live.followed()).toEqual(new Map());
    } finally {
      admin.disconnect();
      for (const h of hubs) {
        await h.hub.stop();
        await h.bus.close();
        await h.store.close();
      }
    }
  }, 30_000);
});
