import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal as refused } from '../support/refusal.js';

// Presence (docs/collab.md "Live channel"): a heartbeat joins or renews; a colour of the palette no
// one else in the document has while the palette lasts; gone 30 s after the last heartbeat (the
// entry kept 4 x 30 s in the store); leave by the person or an operator; the sweep announces each
// time-out once. The module is imported inside each test, so a changed constant fails tests.
const load = async () => ({ ...(await import('../../src/collab/presence.js')), ...(await import('../../src/collab/model.js')) });

const T0 = Date.UTC(2026, 10, 24, 9, 0, 0);
/** The room index of a document: that of its presence key's partition (src/presence.ts). */
const rooms = (doc: string) => `md:presence-rooms:{#${partitionOf(`md:presence:${doc}`)}}`;
const alice = { id: 'u_alice', name: '앨리스' };
const bob = { id: 'u_bob', name: '밥' };
const operator = { id: 'u_op', name: '운영자', operator: true };

const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

/** A Presence on its own store; every write of its updates is recorded. */
async function setup() {
  const { Presence } = await load();
  const store = await openLmdbStore({ path: tempDir('collab-presence') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const events: { topic: string; msg: Record<string, unknown> }[] = [];
  const presence = new Presence({ store: recording, clock, publish: (topic, msg) => void events.push({ topic, msg: msg as Record<string, unknown> }) });
  return { presence, store, clock, events, writes };
}

const refusal = (p: Promise<unknown>) => refused(p, { details: true });

describe('joining', () => {
  it('labels a person by their name trimmed, by their id when the name is blank; a heartbeat keeps the colour and renews the name', async () => {
    const { presence } = await setup();
    const spaced = await presence.join('doc-n', { id: 'u_kim', name: '  김  ' });
    expect(spaced.peers[0]).toMatchObject({ user: 'u_kim', name: '김' });
    const blank = await presence.join('doc-n', { id: 'u_blank', name: '   ' });
    expect(blank.peers.find((p) => p.user === 'u_blank')!.name).toBe('u_blank');
    const again = await presence.join('doc-n', { id: 'u_kim', name: '김철수' }, spaced.id);
    expect(again.id).toBe(spaced.id);
    expect(again.color).toBe(spaced.color);
    expect(again.peers.find((p) => p.id === spaced.id)!.name).toBe('김철수');
    expect(again.peers).toHaveLength(2);
    // the colour stays when the one before it is freed
    const { PALETTE } = await load();
    await presence.leave('doc-n', { id: 'u_kim', name: '김철수' }, spaced.id);
    const kept = await presence.join('doc-n', { id: 'u_blank', name: '   ' }, blank.id);
    expect(blank.color).toBe(PALETTE[1]);
    expect(kept.color).toBe(PALETTE[1]);
  });

  it('gives each entry a new id and the first colour no one in the document has, and tells the room once', async () => {
    const { PALETTE, PRESENCE_TIMEOUT_MS } = await load();
    expect(PRESENCE_TIMEOUT_MS).toBe(30_000);
    const { presence, events } = await setup();
    const a = await presence.join('doc-a', alice);
    expect(a.id).toMatch(/^[0-9a-f]{16}$/);
    expect(a.color).toBe(PALETTE[0]);
    expect(a.peers).toEqual([{ id: a.id, user: 'u_alice', name: '앨리스', color: PALETTE[0], joined: T0, seen: T0 }]);
    const b = await presence.join('doc-a', bob);
    expect(b.color).toBe(PALETTE[1]);
    const a2 = await presence.join('doc-a', alice); // a second tab: an entry of its own
    expect(a2.id).not.toBe(a.id);
    expect(a2.color).toBe(PALETTE[2]);
    expect(b.peers.map((p) => p.name)).toEqual(['앨리스', '밥']);
    expect(events.map((e) => [e.topic, e.msg.type, e.msg.event, (e.msg.peer as { id: string }).id, (e.msg.peers as unknown[]).length])).toEqual([
      ['md:doc-a', 'presence', 'join', a.id, 1],
      ['md:doc-a', 'presence', 'join', b.id, 2],
      ['md:doc-a', 'presence', 'join', a2.id, 3],
    ]);
    expect(events[0]!.msg.slug).toBe('doc-a');
    // another document starts its palette again
    expect((await presence.join('doc-b', bob)).color).toBe(PALETTE[0]);
  });

  it('renews an entry by its id: same colour, new name and time, no announcement', async () => {
    const { presence, clock, events } = await setup();
    const a = await presence.join('doc-a', alice);
    clock.advance(15_000);
    const again = await presence.join('doc-a', { id: 'u_alice', name: 'Alice' }, a.id);
    expect(again.id).toBe(a.id);
    expect(again.color).toBe(a.color);
    expect(again.peers).toEqual([{ id: a.id, user: 'u_alice', name: 'Alice', color: a.color, joined: T0, seen: T0 + 15_000 }]);
    expect(events).toHaveLength(1);
    // an id not in the document yet is a join under that id
    const named = await presence.join('doc-a', bob, 'tab-bob');
    expect(named.id).toBe('tab-bob');
    expect(events).toHaveLength(2);
  });

  it("refuses another person's entry with 403 not_your_presence", async () => {
    const { presence } = await setup();
    const a = await presence.join('doc-a', alice);
    const e = await refusal(presence.join('doc-a', bob, a.id));
    expect([e.status, e.code]).toEqual([403, 'not_your_presence']);
    expect((await presence.peers('doc-a')).map((p) => p.user)).toEqual(['u_alice']);
  });

  it('refuses a slug that is not one', async () => {
    const { presence } = await setup();
    for (const p of [presence.join('../x', alice), presence.leave('A B', alice, 'x'), presence.peers('')]) {
      expect((await refusal(p)).code).toBe('invalid_slug');
    }
  });

  it('shares the palette out again once all 16 colours are taken', async () => {
    const { PALETTE } = await load();
    expect(PALETTE).toHaveLength(16);
    const { presence } = await setup();
    const colors: string[] = [];
    for (let i = 0; i < 18; i++) colors.push((await presence.join('doc-a', { id: `u_${i}`, name: `${i}` })).color);
    expect(colors.slice(0, 16)).toEqual(PALETTE);
    expect(new Set(colors.slice(0, 16)).size).toBe(16);
    expect(colors.slice(16)).toEqual([PALETTE[0], PALETTE[1]]);
  });

  it('drops entries 30 s without a heartbeat before choosing, freeing their colour', async () => {
    const { PALETTE } = await load();
    const { presence, clock } = await setup();
    await presence.join('doc-a', alice);
    clock.advance(29_999);
    const b = await presence.join('doc-a', bob);
    expect(b.color).toBe(PALETTE[1]);
    expect(b.peers.map((p) => p.user)).toEqual(['u_alice', 'u_bob']);
    clock.advance(1); // alice: exactly 30 s
    const c = await presence.join('doc-a', operator);
    expect(c.peers.map((p) => p.user)).toEqual(['u_bob', 'u_op']);
    expect(c.color).toBe(PALETTE[0]);
  });

  it('keeps the entry 4 x 30 s in the store and indexes the room by its oldest heartbeat', async () => {
    const { presence, store, clock, writes } = await setup();
    const a = await presence.join('doc-a', alice);
    clock.advance(10_000);
    await presence.join('doc-a', bob);
    clock.advance(5_000);
    await presence.join('doc-a', alice, a.id); // alice renewed: bob's is the oldest now
    const sets = writes.filter((w) => w.op === 'set');
    expect(sets).toHaveLength(3);
    for (const w of sets) expect(w).toMatchObject({ op: 'set', key: 'md:presence:doc-a', ttlMs: 120_000 });
    expect(writes.filter((w) => w.op === 'index')).toEqual([
      { op: 'index', key: rooms('doc-a'), member: 'doc-a', score: T0 },
      { op: 'index', key: rooms('doc-a'), member: 'doc-a', score: T0 },
      { op: 'index', key: rooms('doc-a'), member: 'doc-a', score: T0 + 10_000 },
    ]);
    expect(await store.indexScore(rooms('doc-a'), 'doc-a')).toBe(T0 + 10_000);
  });
});

describe('peers', () => {
  it('lists entries seen less than 30 s ago', async () => {
    const { presence, clock } = await setup();
    expect(await presence.peers('doc-a')).toEqual([]);
    await presence.join('doc-a', alice);
    clock.advance(1_000);
    await presence.join('doc-a', bob);
    clock.advance(28_999);
    expect((await presence.peers('doc-a')).map((p) => p.user)).toEqual(['u_alice', 'u_bob']);
    clock.advance(1);
    expect((await presence.peers('doc-a')).map((p) => p.user)).toEqual(['u_bob']);
    clock.advance(1_000);
    expect(await presence.peers('doc-a')).toEqual([]);
  });
});

describe('leaving', () => {
  it('removes the own entry and tells the room; the last one out removes the room', async () => {
    const { presence, store, events, writes } = await setup();
    const a = await presence.join('doc-a', alice);
    const b = await presence.join('doc-a', bob);
    events.length = 0;
    writes.length = 0;
    expect(await presence.leave('doc-a', alice, a.id)).toEqual({ left: true });
    expect(events).toEqual([
      { topic: 'md:doc-a', msg: { type: 'presence', event: 'leave', slug: 'doc-a', reason: 'left', peer: a.peers[0], peers: [b.peers[1]] } },
    ]);
    expect(writes).toEqual([{ op: 'set', key: 'md:presence:doc-a', value: { [b.id]: b.peers[1] }, ttlMs: 120_000 }]);
    expect(await presence.leave('doc-a', bob, b.id)).toEqual({ left: true });
    expect(writes.slice(1)).toEqual([
      { op: 'del', key: 'md:presence:doc-a' },
      { op: 'unindex', key: rooms('doc-a'), member: 'doc-a' },
    ]);
    expect(await store.get('md:presence:doc-a')).toBeUndefined();
    expect(await store.indexScore(rooms('doc-a'), 'doc-a')).toBeUndefined();
  });

  it("refuses another person's entry, lets an operator remove it, and answers false for an unknown one", async () => {
    const { presence, events } = await setup();
    const a = await presence.join('doc-a', alice);
    events.length = 0;
    const e = await refusal(presence.leave('doc-a', bob, a.id));
    expect([e.status, e.code]).toEqual([403, 'not_your_presence']);
    expect(await presence.peers('doc-a')).toHaveLength(1);
    expect(await presence.leave('doc-a', operator, a.id)).toEqual({ left: true });
    expect(events).toHaveLength(1);
    expect(await presence.leave('doc-a', operator, a.id)).toEqual({ left: false });
    expect(await presence.leave('doc-b', alice, 'nobody')).toEqual({ left: false });
    expect(events).toHaveLength(1);
  });
});

describe('the sweep', () => {
  it('removes each entry at 30 s without a heartbeat, once, and tells the room who is left', async () => {
    const { presence, store, clock, events, writes } = await setup();
    const a = await presence.join('doc-a', alice);
    clock.advance(10_000);
    const b = await presence.join('doc-a', bob);
    await presence.join('doc-b', operator);
    events.length = 0;
    writes.length = 0;
    clock.advance(19_999); // alice 29.999 s
    expect(await presence.sweep()).toBe(0);
    expect(events).toEqual([]);
    clock.advance(1); // alice 30 s, bob and the operator 20 s
    expect(await presence.sweep()).toBe(1);
    expect(events).toEqual([
      { topic: 'md:doc-a', msg: { type: 'presence', event: 'leave', slug: 'doc-a', reason: 'timeout', peer: a.peers[0], peers: [b.peers[1]] } },
    ]);
    expect(writes).toEqual([
      { op: 'set', key: 'md:presence:doc-a', value: { [b.id]: b.peers[1] } },
      { op: 'index', key: rooms('doc-a'), member: 'doc-a', score: T0 + 10_000 },
    ]);
    expect(await presence.sweep()).toBe(0);
    expect(events).toHaveLength(1);
    clock.advance(9_999);
    expect(await presence.sweep()).toBe(0);
    clock.advance(1); // bob and the operator 30 s
    writes.length = 0;
    expect(await presence.sweep()).toBe(2);
    expect(events.slice(1).map((e) => [e.topic, e.msg.reason, (e.msg.peer as { user: string }).user, e.msg.peers])).toEqual([
      ['md:doc-a', 'timeout', 'u_bob', []],
      ['md:doc-b', 'timeout', 'u_op', []],
    ]);
    expect(writes).toEqual([
      { op: 'del', key: 'md:presence:doc-a' },
      { op: 'unindex', key: rooms('doc-a'), member: 'doc-a' },
      { op: 'del', key: 'md:presence:doc-b' },
      { op: 'unindex', key: rooms('doc-b'), member: 'doc-b' },
    ]);
    for (const doc of ['doc-a', 'doc-b']) expect(await store.indexRange(rooms(doc))).toEqual([]);
    expect(await presence.sweep()).toBe(0);
  });

  it('only opens rooms whose oldest heartbeat is 30 s old', async () => {
    const { presence, clock, writes } = await setup();
    await presence.join('doc-a', alice);
    clock.advance(5_000);
    await presence.join('doc-b', bob);
    writes.length = 0;
    clock.advance(25_000); // doc-a 30 s old, doc-b 25 s
    expect(await presence.sweep()).toBe(1);
    expect(writes.map((w) => w.key)).toEqual(['md:presence:doc-a', rooms('doc-a')]);
  });

  it("indexes a room it keeps by the oldest heartbeat left", async () => {
    const { presence, store, clock } = await setup();
    await presence.join('doc-a', alice);
    clock.advance(5_000);
    await presence.join('doc-a', bob);
    clock.advance(5_000);
    await presence.join('doc-a', operator);
    clock.advance(20_000); // alice 30 s
    expect(await presence.sweep()).toBe(1);
    expect(await store.indexScore(rooms('doc-a'), 'doc-a')).toBe(T0 + 5_000);
  });
});
