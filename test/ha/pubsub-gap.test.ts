import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { Hub } from '../../src/hub/index.js';
import { openRedisStore } from '../../src/store/redis.js';
import { redisBinariesOrSkip, startRedisServer } from '../support/sentinel.js';
import { sleep } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

// A hub's pub/sub connection to Redis drops (a restart, a failover, a network cut) while another
// process publishes on a topic with a history. The messages published meanwhile never reach this
// process through pub/sub; the next one that does shows the gap in offsets, and the hub fills it
// from the history before delivering it: the socket subscribed here misses nothing, in order.

const binaries = redisBinariesOrSkip();

describe.skipIf(!binaries)('a pub/sub gap', () => {
  it('is filled from the history: a WebSocket subscriber gets every message once, in order', async () => {
    // its own server: the test cuts every pub/sub connection on it
    const redis = await startRedisServer();
    const prefix = 'gap:';
    const storeA = await openRedisStore({ url: redis.url, prefix });
    const storeB = await openRedisStore({ url: redis.url, prefix });
    const busA = createBus(storeA, 'process-a');
    const busB = createBus(storeB, 'process-b');
    const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: mkdtempSync(join(tmpdir(), 'maru-web-')), shutdownGraceMs: 500, sse: { heartbeatMs: 60_000 } });
    hub.attachBus(busA);
    hub.topic({ name: 'feed', policy: 'close', history: 100 });
    busB.retain('feed', { size: 100 });
    await busA.start();
    await busB.start();
    const base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
    const admin = new Redis(redis.url);
    try {
      const client = await connectTopics(base);
      await client.subscribe('feed');
      await busB.publish('feed', { n: 0 });
      expect((await client.next()).data).toEqual({ n: 0 });

      // cut every pub/sub connection and publish at once, before they are back
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      for (let n = 1; n <= 5; n++) await busB.publish('feed', { n });
      await sleep(1500); // process a's subscriber is back by now
      await busB.publish('feed', { n: 6 });

      const got: { n: number; offset: number }[] = [];
      while (got.length < 6) {
        const f = await client.next(5_000);
        got.push({ n: f.data.n, offset: f.offset });
      }
      expect(got.map((g) => g.n)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(got.map((g) => g.offset)).toEqual(got.map((_, i) => got[0]!.offset + i));
      await sleep(200);
      await expect(client.next(300)).rejects.toThrow(/no frame/); // nothing twice
      client.close();
    } finally {
      admin.disconnect();
      await hub.stop();
      await busA.close();
      await busB.close();
      await storeA.close();
      await storeB.close();
      await redis.kill();
    }
  }, 30_000);
});
