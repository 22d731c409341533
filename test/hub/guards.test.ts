import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { badRequest } from '../../src/errors.js';
import { rateLimit } from '../../src/hub/guards.js';
import { storeUnavailable } from '../../src/store/redis-unavailable.js';
import { Hub } from '../../src/hub/index.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** A hub with GET /limited guarded by a 3-per-10-s limit, counted per x-client header. */
async function hubWith(store: Store, clock: ManualClock, limited: string[] = []) {
  const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: tempDir('guards-web'), shutdownGraceMs: 100 });
  hub.route({
    method: 'GET',
    path: '/limited',
    guards: [
      rateLimit({
        store,
        clock,
        name: 'test',
        limit: 3,
        windowMs: 10_000,
        key: (ctx) => (ctx.headers['x-client'] === 'trusted' ? undefined : (ctx.headers['x-client'] ?? ctx.remoteAddress)),
        onLimited: (_ctx, info) => {
          limited.push(info.client);
        },
      }),
    ],
    // x-fail: the store out of reach while the request is served (a failover)
    handler: (ctx) => {
      if (ctx.headers['x-fail'] === 'store') throw storeUnavailable('the store is not reachable: test');
      if (ctx.headers['x-fail'] === 'bad') throw badRequest('bad', 'a refusal of the request itself');
      return { ok: true };
    },
  });
  cleanup.push(() => hub.stop());
  return hub;
}

/** In process (hub.inject): the counting is the point here, not the socket. */
const hit = async (hub: Hub, client?: string, fail?: 'store' | 'bad') => {
  const a = await hub.inject('GET', '/limited', { headers: { ...(client ? { 'x-client': client } : {}), ...(fail ? { 'x-fail': fail } : {}) } });
  return { status: a.status, headers: new Headers(a.headers), json: async () => a.body };
};

describe('rateLimit guard', () => {
  it('allows `limit` requests per client and window, then 429 with Retry-After until the window ends', async () => {
    const store = await openLmdbStore({ path: tempDir('guards') });
    cleanup.push(() => store.close());
    const clock = new ManualClock(1_000_000_000_000 + 4_000); // 4 s into a 10 s window
    const limited: string[] = [];
    const h = await hubWith(store, clock, limited);
    for (let i = 0; i < 3; i++) expect((await hit(h, 'a')).status).toBe(200);
    const refused = await hit(h, 'a');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('6');
    expect((await refused.json()).error).toEqual({
      code: 'rate_limited',
      message: 'too many requests: at most 3 per 10 s',
      details: { limit: 3, window_s: 10, retry_after_s: 6 },
    });
    expect(limited).toEqual(['a']);
    // other clients have their own count; an uncounted key passes freely
    expect((await hit(h, 'b')).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await hit(h, 'trusted')).status).toBe(200);
    // refused requests do not count; the next window starts afresh
    clock.advance(6_000);
    for (let i = 0; i < 3; i++) expect((await hit(h, 'a')).status).toBe(200);
    expect((await hit(h, 'a')).status).toBe(429);
  });

  it('a request answered 503 (the store out of reach) does not count; one refused as bad does', async () => {
    const store = await openLmdbStore({ path: tempDir('guards-refund') });
    cleanup.push(() => store.close());
    const h = await hubWith(store, new ManualClock(0));
    for (let i = 0; i < 5; i++) expect((await hit(h, 'r', 'store')).status).toBe(503);
    await new Promise((r) => setTimeout(r, 50)); // the refunds are written after the answer
    for (let i = 0; i < 3; i++) expect((await hit(h, 'r')).status).toBe(200);
    expect((await hit(h, 'r')).status).toBe(429);
    expect((await hit(h, 's', 'bad')).status).toBe(400);
    for (let i = 0; i < 2; i++) expect((await hit(h, 's')).status).toBe(200);
    expect((await hit(h, 's')).status).toBe(429);
  });

  it('counts concurrent requests exactly', async () => {
    const store = await openLmdbStore({ path: tempDir('guards-conc') });
    cleanup.push(() => store.close());
    const h = await hubWith(store, new ManualClock(0));
    const statuses = await Promise.all(Array.from({ length: 12 }, () => hit(h, 'c').then((r) => r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(9);
  });

  it.runIf(redis.available)('holds across two hubs sharing Redis', async () => {
    const prefix = uniquePrefix('guards');
    cleanup.push(() => deletePrefix(redis.url, prefix));
    const [s1, s2] = [await openRedisStore({ url: redis.url, prefix }), await openRedisStore({ url: redis.url, prefix })];
    cleanup.push(() => s1.close(), () => s2.close());
    const clock = new ManualClock(0);
    const [a, b] = [await hubWith(s1, clock), await hubWith(s2, clock)];
    const statuses = await Promise.all(
      Array.from({ length: 10 }, (_, i) => hit(i % 2 ? a : b, 'shared').then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(3);
    expect((await hit(a, 'shared')).status).toBe(429);
    expect((await hit(b, 'shared')).status).toBe(429);
  });

  it('refuses nonsense limits', () => {
    const store = {} as Store;
    expect(() => rateLimit({ store, clock: new ManualClock(0), name: 'x', limit: 0, windowMs: 1 })).toThrow(RangeError);
    expect(() => rateLimit({ store, clock: new ManualClock(0), name: 'x', limit: 1, windowMs: 0 })).toThrow(RangeError);
  });
});
