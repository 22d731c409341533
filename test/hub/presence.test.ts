import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { Hub } from '../../src/hub/index.js';
import { PresenceManager } from '../../src/presence.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { openRedisStore } from '../../src/store/redis.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';
import { tempDir } from '../support/process.js';
import { waitFor } from '../support/wait.js';
import { connectTopics, type TopicClient } from '../support/ws.js';

const redis = await redisOrSkip();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function state() {
  const store = await openLmdbStore({ path: tempDir('presence') });
  cleanup.push(() => store.close());
  return { store, clock: new ManualClock(1_000_000_000_000) };
}

describe('PresenceManager', () => {
  it('adds, renews, lists, counts and removes clients; a client id names one user', async () => {
    const { store, clock } = await state();
    const p = new PresenceManager({ store, clock, timeoutMs: 10_000 });
    const a = await p.add('room', 'c1', { user: 'ann', info: { seat: 'A1' } });
    expect(a).toMatchObject({ joined: true, entry: { id: 'c1', user: 'ann', seat: 'A1', joined: clock.now(), seen: clock.now() } });
    await p.add('room', 'c2', { user: 'ann' });
    await p.add('room', 'c3', { user: 'bob', info: (_cur, others) => ({ order: others.length }) });
    expect(await p.stats('room')).toEqual({ clients: 3, users: 2 });
    expect((await p.list('room')).find((e) => e.id === 'c3')).toMatchObject({ order: 2 });
    clock.advance(5_000);
    const renewed = await p.add('room', 'c1', { user: 'ann' });
    expect(renewed).toMatchObject({ joined: false, entry: { seat: 'A1', joined: clock.now() - 5_000, seen: clock.now() } });
    await expect(p.add('room', 'c1', { user: 'bob' })).rejects.toMatchObject({ status: 403, code: 'not_your_presence' });
    await expect(p.remove('room', 'c2', () => { throw new Error('no'); })).rejects.toThrow('no');
    expect(await p.remove('room', 'c2')).toMatchObject({ entry: { id: 'c2' }, entries: [{ id: 'c1' }, { id: 'c3' }] });
    expect(await p.remove('room', 'c2')).toBeUndefined();
    expect(await p.stats('room')).toEqual({ clients: 2, users: 2 });
    expect(await p.stats('empty')).toEqual({ clients: 0, users: 0 });
  });

  it('entries without a heartbeat expire; the sweep removes them once, topic by topic, and forgets empty topics', async () => {
    const { store, clock } = await state();
    const p = new PresenceManager({ store, clock, timeoutMs: 10_000 });
    await p.add('t1', 'a', { user: 'ann' });
    await p.add('t2', 'b', { user: 'bob' });
    await p.add('t2', 'long', { user: 'cid', ttlMs: 60_000 });
    clock.advance(6_000);
    await p.add('t1', 'c', { user: 'cid' });
    expect(await p.sweep()).toEqual([]);
    clock.advance(5_000); // a and b are 11 s old, c 5 s, long has a minute
    expect((await p.list('t1')).map((e) => e.id)).toEqual(['c']);
    const swept = await p.sweep();
    expect(swept.map((s) => [s.topic, s.removed.map((e) => e.id), s.left.map((e) => e.id)])).toEqual([
      ['t1', ['a'], ['c']],
      ['t2', ['b'], ['long']],
    ]);
    expect(await p.sweep()).toEqual([]);
    clock.advance(60_000);
    expect((await p.sweep()).map((s) => s.topic).sort()).toEqual(['t1', 't2']);
    expect(await store.indexRange('presence:topics')).toEqual([]);
    expect(await store.get('presence:t1')).toBeUndefined();
    await expect(p.add('t1', 'x', { user: 'u', ttlMs: 0 })).rejects.toThrow(RangeError);
    expect(() => new PresenceManager({ store, clock, timeoutMs: 0 })).toThrow(RangeError);
  });
});

describe('presence on Redis', () => {
  it.runIf(redis.available)('two processes sharing the store see one set, and one of them sweeps each time-out once', async () => {
    const prefix = uniquePrefix('presence');
    cleanup.push(() => deletePrefix(redis.url, prefix));
    const [s1, s2] = [await openRedisStore({ url: redis.url, prefix }), await openRedisStore({ url: redis.url, prefix })];
    cleanup.push(() => s1.close(), () => s2.close());
    const clock = new ManualClock(1_000_000_000_000);
    const [p1, p2] = [new PresenceManager({ store: s1, clock, timeoutMs: 10_000 }), new PresenceManager({ store: s2, clock, timeoutMs: 10_000 })];
    await Promise.all([p1.add('show', 'a', { user: 'ann' }), p2.add('show', 'b', { user: 'bob' }), p2.add('show', 'c', { user: 'ann' })]);
    expect(await p1.stats('show')).toEqual({ clients: 3, users: 2 });
    expect((await p2.list('show')).map((e) => e.id).sort()).toEqual(['a', 'b', 'c']);
    clock.advance(6_000);
    await p1.add('show', 'a', { user: 'ann' });
    clock.advance(5_000);
    const [r1, r2] = await Promise.all([p1.sweep(), p2.sweep()]);
    expect([...r1, ...r2].flatMap((s) => s.removed.map((e) => e.id)).sort()).toEqual(['b', 'c']);
    expect(await p2.stats('show')).toEqual({ clients: 1, users: 1 });
  });
});

describe('topics declared with presence, on a started hub', () => {
  async function started() {
    const { store, clock } = await state();
    const hub = new Hub({ logger: pino({ level: process.env.DEBUG_PRESENCE ? 'debug' : 'silent' }), bodyLimit: 1024, webDir: tempDir('presence-web'), shutdownGraceMs: 100, presenceTimeoutMs: 300 });
    hub.topic({ name: 'show:*', policy: 'close', presence: true });
    hub.topic({ name: 'plain', policy: 'close' });
    hub.sse({ path: '/watch', topics: ['show:1'] });
    hub.useState(store, clock);
    const port = await hub.listen('127.0.0.1', 0);
    cleanup.push(() => hub.stop());
    return { hub, clock, base: `http://127.0.0.1:${port}` };
  }
  const presence = async (c: TopicClient) => {
    for (;;) {
      const f = await c.next();
      if (f.data?.type === 'presence') return f.data;
    }
  };

  it('WebSocket subscribers join on subscribe and leave on unsubscribe and close, with the counts on the topic', async () => {
    const { hub, base } = await started();
    const a = await connectTopics(base);
    await a.subscribe('show:1');
    expect(await presence(a)).toMatchObject({ type: 'presence', event: 'join', topic: 'show:1', user: null, clients: 1, users: 1 });
    const b = await connectTopics(base);
    await b.subscribe('show:1');
    await b.subscribe('plain');
    expect(await presence(a)).toMatchObject({ event: 'join', clients: 2 });
    expect(await presence(b)).toMatchObject({ event: 'join', clients: 2 });
    expect(await hub.presence.stats('show:1')).toEqual({ clients: 2, users: 2 });
    expect(await hub.presence.stats('plain')).toEqual({ clients: 0, users: 0 });
    b.ws.send(JSON.stringify({ type: 'unsubscribe', topic: 'show:1' }));
    expect(await presence(a)).toMatchObject({ event: 'leave', reason: 'left', clients: 1 });
    // an SSE client of a stream over the topic is on it too
    const ctl = new AbortController();
    const res = await fetch(`${base}/watch`, { signal: ctl.signal });
    expect(res.status).toBe(200);
    expect(await presence(a)).toMatchObject({ event: 'join', clients: 2 });
    ctl.abort();
    expect(await presence(a)).toMatchObject({ event: 'leave', reason: 'left', clients: 1 });
    const c = await connectTopics(base);
    await c.subscribe('show:1');
    expect(await presence(a)).toMatchObject({ event: 'join', clients: 2 });
    c.close();
    expect(await presence(a)).toMatchObject({ event: 'leave', reason: 'left', clients: 1 });
    a.close();
    await waitFor(async () => (await hub.presence.stats('show:1')).clients === 0);
    b.close();
  });

  it('the heartbeat keeps an open subscriber; an entry nobody renews times out with a leave event', async () => {
    const { hub, clock, base } = await started();
    const a = await connectTopics(base);
    await a.subscribe('show:2');
    expect(await presence(a)).toMatchObject({ event: 'join', clients: 1 });
    // another process's client whose process died: nobody renews it
    await hub.presence.add('show:2', 'gone:ws:1', { user: 'someone' });
    // the clock runs at real time and a little faster; heartbeats every 100 ms of real time keep `a`
    for (let i = 0; i < 6; i++) {
      clock.advance(100);
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(await presence(a)).toMatchObject({ event: 'leave', reason: 'timeout', client: 'gone:ws:1', user: 'someone', clients: 1 });
    expect((await hub.presence.list('show:2')).map((e) => e.id)).toHaveLength(1);
    a.close();
  });
});
