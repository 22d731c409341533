import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from '../../src/bus.js';
import { Hub } from '../../src/hub/index.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { connectTopics } from '../support/ws.js';
import { waitFor } from '../support/wait.js';

let hub: Hub;
let bus: Bus;
let store: Store;
let base: string;

beforeAll(async () => {
  const web = mkdtempSync(join(tmpdir(), 'maru-web-'));
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: web, shutdownGraceMs: 500, sse: { heartbeatMs: 60_000 } });
  store = await openLmdbStore({ path: mkdtempSync(join(tmpdir(), 'maru-recovery-')) });
  bus = createBus(store, 'test');
  hub.attachBus(bus);
  await bus.start();
  hub.topic({ name: 'feed', policy: 'close', history: 50 });
  hub.topic({ name: 'room:*', policy: 'drop', history: 3 });
  hub.topic({ name: 'plain', policy: 'drop' });
  hub.sse({ path: '/stream', topics: ['feed'] });
  hub.sse({ path: '/two', topics: ['feed', 'room:x'], filter: (m) => (m.message as { hide?: boolean }).hide !== true });
  base = `http://127.0.0.1:${await hub.listen('127.0.0.1', 0)}`;
});
afterAll(async () => {
  await hub.stop();
  await bus.close();
  await store.close();
});

describe('/ws subscriptions with since', () => {
  it('answers with the position, then recovers what a client missed while away', async () => {
    const a = await connectTopics(base);
    a.ws.send(JSON.stringify({ type: 'subscribe', topic: 'feed' }));
    const ack = await a.next();
    expect(ack).toMatchObject({ type: 'subscribed', topic: 'feed', position: { offset: expect.any(Number), epoch: expect.any(String) } });
    await bus.publish('feed', { n: 1 });
    const first = await a.next();
    expect(first).toEqual({ type: 'message', topic: 'feed', data: { n: 1 }, offset: ack.position.offset + 1, epoch: ack.position.epoch });
    a.close();

    // three messages while away
    for (let n = 2; n <= 4; n++) await bus.publish('feed', { n });
    const b = await connectTopics(base);
    b.ws.send(JSON.stringify({ type: 'subscribe', topic: 'feed', since: { offset: first.offset, epoch: first.epoch } }));
    expect(await b.next()).toMatchObject({ type: 'subscribed', topic: 'feed', recovered: true, position: { offset: first.offset + 3 } });
    expect([(await b.next()).data, (await b.next()).data, (await b.next()).data]).toEqual([{ n: 2 }, { n: 3 }, { n: 4 }]);
    // and then live, with nothing doubled
    await bus.publish('feed', { n: 5 });
    expect(await b.next()).toMatchObject({ type: 'message', data: { n: 5 }, offset: first.offset + 4 });
    b.close();
  });

  it('says recovered: false when the position is from another epoch, ahead, or past the history', async () => {
    const c = await connectTopics(base);
    for (let n = 0; n < 5; n++) await bus.publish('room:y', { n });
    const { position } = await bus.history('room:y');
    const cases: [unknown, string][] = [
      [{ offset: 1, epoch: 'cafebabe' }, 'epoch'],
      [{ offset: position.offset + 10, epoch: position.epoch }, 'ahead'],
      [{ offset: position.offset - 4, epoch: position.epoch }, 'gap'],
    ];
    for (const [since, reason] of cases) {
      c.ws.send(JSON.stringify({ type: 'subscribe', topic: 'room:y', since }));
      expect(await c.next()).toEqual({ type: 'subscribed', topic: 'room:y', position, recovered: false, reason });
    }
    // a malformed since is refused; a topic without history ignores since
    c.ws.send(JSON.stringify({ type: 'subscribe', topic: 'room:y', since: { offset: -1, epoch: 'x' } }));
    expect(await c.next()).toMatchObject({ type: 'error', code: 'invalid_frame', topic: 'room:y' });
    c.ws.send(JSON.stringify({ type: 'subscribe', topic: 'plain', since: { offset: 3, epoch: 'abc' } }));
    expect(await c.next()).toEqual({ type: 'subscribed', topic: 'plain' });
    c.close();
  });

  it('loses nothing and doubles nothing while messages arrive during recovery', async () => {
    const { position } = await bus.history('feed');
    const d = await connectTopics(base);
    const burst = Array.from({ length: 30 }, (_, i) => bus.publish('feed', { burst: i }));
    d.ws.send(JSON.stringify({ type: 'subscribe', topic: 'feed', since: position }));
    await Promise.all(burst);
    expect(await d.next()).toMatchObject({ type: 'subscribed', recovered: true });
    const offsets: number[] = [];
    while (offsets.length < 30) offsets.push((await d.next()).offset);
    expect(offsets).toEqual(Array.from({ length: 30 }, (_, i) => position.offset + 1 + i));
    d.close();
  });
});

/** A raw SSE client: the events of one connection, parsed. */
async function sse(path: string, lastEventId?: string) {
  const ctl = new AbortController();
  const res = await fetch(base + path, { signal: ctl.signal, headers: lastEventId ? { 'last-event-id': lastEventId } : {} });
  const events: { event?: string; id?: string; data?: string }[] = [];
  let ids: string[] = [];
  let buf = '';
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buf += decoder.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev: { event?: string; id?: string; data?: string } = {};
          for (const line of block.split('\n')) {
            const [k, ...rest] = line.split(': ');
            if (k === 'id' || k === 'event' || k === 'data') ev[k] = rest.join(': ');
          }
          if (ev.id) ids = [...ids, ev.id];
          if (ev.data !== undefined) events.push(ev);
        }
      }
    } catch {
      // aborted
    }
  })();
  const until = (pred: () => boolean) => waitFor(pred, 2000, 'stream events');
  return { events, lastId: () => ids[ids.length - 1], until, close: () => ctl.abort() };
}

describe('hub.sse over Bus topics', () => {
  it('gives every event an id and resumes from Last-Event-ID with the missed events first', async () => {
    const s = await sse('/stream');
    await s.until(() => s.lastId() !== undefined); // the id-only position block
    const startId = s.lastId()!;
    await bus.publish('feed', { type: 'note', n: 'a' });
    await s.until(() => s.events.length === 1);
    expect(s.events[0]).toMatchObject({ event: 'note', data: JSON.stringify({ type: 'note', n: 'a' }) });
    const afterA = s.events[0]!.id!;
    expect(afterA).not.toBe(startId);
    s.close();

    await bus.publish('feed', { type: 'note', n: 'b' });
    await bus.publish('feed', { type: 'note', n: 'c' });
    const r = await sse('/stream', afterA);
    await s.until(() => r.events.length === 2);
    expect(r.events.map((e) => JSON.parse(e.data!).n)).toEqual(['b', 'c']);
    await bus.publish('feed', { type: 'note', n: 'd' });
    await r.until(() => r.events.length === 3);
    expect(JSON.parse(r.events[2]!.data!).n).toBe('d');
    r.close();

    // from the position block alone (no event seen yet) the resume works too
    const fromStart = await sse('/stream', startId);
    await fromStart.until(() => fromStart.events.length === 4);
    expect(fromStart.events.map((e) => JSON.parse(e.data!).n)).toEqual(['a', 'b', 'c', 'd']);
    fromStart.close();
  });

  it('answers an id it cannot honour with a reset event, then continues live', async () => {
    const { position } = await bus.history('feed');
    for (const [id, reason] of [
      [`${position.epoch}-${position.offset + 100}`, 'ahead'],
      [`0badc0de-1`, 'epoch'],
      ['garbage', 'malformed'],
    ] as const) {
      const s = await sse('/stream', id);
      await s.until(() => s.events.length === 1);
      expect(s.events[0]!.event).toBe('reset');
      const data = JSON.parse(s.events[0]!.data!);
      expect(data).toMatchObject({ type: 'reset', reason, position: { feed: { epoch: position.epoch } } });
      expect(s.events[0]!.id).toBe(`${position.epoch}-${data.position.feed.offset}`);
      await bus.publish('feed', { type: 'after', reason });
      await s.until(() => s.events.length === 2);
      expect(JSON.parse(s.events[1]!.data!)).toEqual({ type: 'after', reason });
      s.close();
    }
  });

  it('carries one position per topic and applies the filter', async () => {
    const s = await sse('/two');
    await s.until(() => s.lastId() !== undefined);
    expect(s.lastId()!.split('.')).toHaveLength(2);
    await bus.publish('room:x', { type: 'r', hide: true });
    await bus.publish('room:x', { type: 'r', n: 1 });
    await bus.publish('feed', { type: 'f', n: 2 });
    await s.until(() => s.events.length === 2);
    expect(s.events.map((e) => JSON.parse(e.data!).n)).toEqual([1, 2]);
    const mid = s.events[0]!.id!;
    s.close();
    const r = await sse('/two', mid);
    await r.until(() => r.events.length === 1);
    expect(JSON.parse(r.events[0]!.data!)).toEqual({ type: 'f', n: 2 });
    r.close();
  });
});
