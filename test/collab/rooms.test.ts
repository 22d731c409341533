import * as encoding from 'lib0/encoding';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import * as Y from 'yjs';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { Rooms, applyDiff, reconcile, type Peer, type RoomTransport } from '../../src/collab/rooms.js';
import { CollabService } from '../../src/collab/service.js';
import { openStore } from '../../src/store/open.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

/** In-memory pub/sub that drops a seeded share of messages, like Redis pub/sub under trouble. */
function lossyBus(dropRate: number, seed = 7) {
  const subs = new Map<string, Set<(m: string) => void>>();
  let s = seed;
  const rnd = () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
  let dropped = 0;
  const transport: RoomTransport = {
    async publish(ch, m) {
      if (rnd() < dropRate) return void dropped++;
      for (const h of subs.get(ch) ?? []) setTimeout(() => h(m), 1);
    },
    async subscribe(ch, h) {
      if (!subs.has(ch)) subs.set(ch, new Set());
      subs.get(ch)!.add(h);
      return async () => void subs.get(ch)!.delete(h);
    },
  };
  return { transport, dropped: () => dropped };
}

/** A peer that ignores what the room sends it. */
function fakeConn(): Peer {
  return { send: () => undefined, close: () => undefined };
}

function updateFrame(update: Uint8Array): Uint8Array {
  const enc = encoding.createEncoder();
  encoding.writeVarUint(enc, 0);
  encoding.writeVarUint(enc, 2);
  encoding.writeVarUint8Array(enc, update);
  return encoding.toUint8Array(enc);
}

describe('rooms across processes over a lossy pub/sub', () => {
  let store: Store;
  afterAll(() => store?.close());

  it('converges although 40% of the room messages are dropped (state-vector anti-entropy)', async () => {
    store = await openStore(loadConfig({ DATA_DIR: tempDir('rooms-lossy') }));
    const service = new CollabService({ store, clock: systemClock, bus: { emit: () => undefined }, maxBytes: 1 << 20 });
    const bus = lossyBus(0.4);
    const mk = (origin: string) => new Rooms({ store, service, origin, logger: pino({ level: 'silent' }), debounceMs: 50, maxDelayMs: 200, resyncMs: 40, transport: bus.transport });
    const p1 = mk('p1');
    const p2 = mk('p2');
    const c1 = fakeConn();
    const c2 = fakeConn();
    p1.open(c1, 'lossy');
    p2.open(c2, 'lossy');
    // two editors, one per process, each with its own Y.Doc sending updates through its process
    const e1 = new Y.Doc();
    const e2 = new Y.Doc();
    e1.on('update', (u: Uint8Array) => p1.message(c1, updateFrame(u)));
    e2.on('update', (u: Uint8Array) => p2.message(c2, updateFrame(u)));
    for (let i = 0; i < 30; i++) {
      e1.getText('content').insert(0, 'a' + i);
      e2.getText('content').insert(e2.getText('content').length, 'b' + i);
      await new Promise((r) => setTimeout(r, 2));
    }
    const end = Date.now() + 5000;
    // converged: both processes hold the same text, with every edit of both editors
    const done = () => p1.text('lossy') === p2.text('lossy') && ['a29', 'b29'].every((x) => (p1.text('lossy') ?? '').includes(x));
    while (!done()) {
      if (Date.now() > end) throw new Error(`no convergence: ${p1.text('lossy')} vs ${p2.text('lossy')}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(bus.dropped()).toBeGreaterThan(5);
    expect(p1.text('lossy')).toContain('a29');
    expect(p1.text('lossy')).toContain('b29');
    await p1.close();
    await p2.close();
    expect((await service.get('lossy')).content).toBe(p2.text('lossy') ?? (await service.get('lossy')).content);
  });

  it('markdown <-> Yjs: the same reconciliation on two processes yields one copy of the text', () => {
    const base = new Y.Doc();
    base.getText('content').insert(0, 'hello');
    const state = Y.encodeStateAsUpdate(base);
    const f1 = reconcile('s', state, 'hello world')!;
    const f2 = reconcile('s', state, 'hello world')!;
    const d = new Y.Doc();
    Y.applyUpdate(d, state);
    Y.applyUpdate(d, f1);
    Y.applyUpdate(d, f2);
    expect(d.getText('content').toString()).toBe('hello world');
    const t = new Y.Doc().getText('content');
    t.insert(0, 'abcdef');
    applyDiff(t, 'abXYef');
    expect(t.toString()).toBe('abXYef');
  });
});
