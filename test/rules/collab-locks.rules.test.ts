import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { CollabService } from '../../src/collab/service.js';
import { K, LOCK_MAX_MS, LOCK_TTL_MS } from '../../src/collab/model.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Json, Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { refusal as refused } from '../support/refusal.js';

// Edit locks (doc 3; docs/collab.md "Locks"): 10 minutes, renewed by the holder up to 60 minutes
// from the acquisition; another editor gets 423 document_locked; the holder or an operator releases;
// expired locks are swept and announced once.

const T0 = Date.UTC(2026, 10, 24, 9, 0, 0);
const alice = { id: 'u_alice', name: '앨리스' };
const bob = { id: 'u_bob', name: '밥' };
const operator = { id: 'u_op', name: '운영자', operator: true };

const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

/** A document on its own store (the sweep walks every lock of a store). */
async function setup(slug: string) {
  const store = await openLmdbStore({ path: tempDir('collab-locks') });
  stores.push(store);
  const clock = new ManualClock(T0);
  const events: { topic: string; msg: Json }[] = [];
  const service = new CollabService({ store, clock, bus: { emit: (topic: string, msg: Json) => void events.push({ topic, msg }) }, maxBytes: 1 << 16 } as never);
  await service.save({ slug, content: `# ${slug}\n`, author: 'seed' });
  events.length = 0;
  return { clock, service, events, store };
}

const refusal = (p: Promise<unknown>) => refused(p, { details: true });

describe('edit locks', () => {
  it('are 10 minutes long and at most 60 minutes from the acquisition', () => {
    expect(LOCK_TTL_MS).toBe(600_000);
    expect(LOCK_MAX_MS).toBe(3_600_000);
  });

  it('lock for 10 minutes and tell the room', async () => {
    const { service, events } = await setup('lock-a');
    const r = await service.locks.lock('lock-a', alice);
    expect(r).toMatchObject({ ok: true, renewed: false, locked: true, holder: 'u_alice', holder_name: '앨리스', remaining_ms: LOCK_TTL_MS });
    expect(r.expires_at).toBe(new Date(T0 + LOCK_TTL_MS).toISOString());
    expect(r.acquired_at).toBe(new Date(T0).toISOString());
    expect(r.max_until).toBe(new Date(T0 + LOCK_MAX_MS).toISOString());
    const { ok: _ok, renewed: _renewed, ...view } = r;
    expect(events).toEqual([
      { topic: 'md:lock-a', msg: { type: 'lock', state: 'locked', ...view } },
      { topic: 'md:all', msg: { type: 'lock', slug: 'lock-a', state: 'locked' } },
    ]);
    events.length = 0;
    await service.locks.lock('lock-a', alice);
    expect(events.map((e) => e.msg)).toEqual([expect.objectContaining({ type: 'lock', state: 'renewed', locked: true }), { type: 'lock', slug: 'lock-a', state: 'renewed' }]);
  });

  it('refuse another editor with 423 naming the holder, until the lock expires', async () => {
    const { clock, service } = await setup('lock-b');
    await service.locks.lock('lock-b', alice);
    clock.advance(LOCK_TTL_MS - 1);
    const e = await refusal(service.locks.lock('lock-b', bob));
    expect([e.status, e.code]).toEqual([423, 'document_locked']);
    expect(e.message).toBe(`lock-b is locked by 앨리스 until ${new Date(T0 + LOCK_TTL_MS).toISOString()}`);
    clock.advance(1);
    const r = await service.locks.lock('lock-b', bob);
    expect(r).toMatchObject({ renewed: false, holder: 'u_bob' });
    expect((await service.locks.state('lock-b')).locked).toBe(true);
  });

  it('renew for the holder up to 60 minutes after the acquisition, then 409 lock_max_reached', async () => {
    const { clock, service } = await setup('lock-c');
    await service.locks.lock('lock-c', alice);
    // renewed a millisecond before it would expire, 10 minutes more each time
    let expires = T0 + LOCK_TTL_MS;
    for (let i = 1; i <= 4; i++) {
      clock.set(expires - 1);
      const r = await service.locks.lock('lock-c', alice);
      expect(r.renewed).toBe(true);
      expect(r.expires).toBe(clock.now() + LOCK_TTL_MS);
      expires = clock.now() + LOCK_TTL_MS;
    }
    clock.set(T0 + 45 * 60_000);
    expect((await service.locks.lock('lock-c', alice)).expires).toBe(T0 + 55 * 60_000);
    // 52 minutes in: the renewal stops at the maximum, not 10 minutes later
    clock.set(T0 + 52 * 60_000);
    const capped = await service.locks.lock('lock-c', alice);
    expect(capped.expires).toBe(T0 + LOCK_MAX_MS);
    expect(capped.remaining_ms).toBe(8 * 60_000);
    clock.advance(60_000);
    const e = await refusal(service.locks.lock('lock-c', alice));
    expect([e.status, e.code]).toEqual([409, 'lock_max_reached']);
    expect(e.message).toBe(`a lock is held at most 60 minutes; this one ends at ${new Date(T0 + LOCK_MAX_MS).toISOString()}`);
    expect(e.details).toEqual({ acquired_at: new Date(T0).toISOString(), max_ms: LOCK_MAX_MS, max_until: new Date(T0 + LOCK_MAX_MS).toISOString() });
  });

  it('are released by the holder, broken by an operator, refused to another editor', async () => {
    const { service, events } = await setup('lock-d');
    await service.locks.lock('lock-d', alice);
    const e = await refusal(service.locks.unlock('lock-d', bob));
    expect([e.status, e.code]).toEqual([403, 'not_lock_holder']);
    expect(e.message).toBe('the lock on lock-d is held by 앨리스; only the holder (or an operator) releases it');
    expect(e.details).toEqual({ holder: 'u_alice', expires_at: new Date(T0 + LOCK_TTL_MS).toISOString() });
    events.length = 0;
    expect(await service.locks.unlock('lock-d', operator)).toEqual({ ok: true, slug: 'lock-d', released: true, broken: true, holder: 'u_alice', locked: false });
    expect(events).toEqual([
      { topic: 'md:lock-d', msg: { type: 'lock', slug: 'lock-d', state: 'broken', locked: false, holder: 'u_alice', broken_by: 'u_op' } },
      { topic: 'md:all', msg: { type: 'lock', slug: 'lock-d', state: 'broken' } },
    ]);
    expect(await service.locks.unlock('lock-d', alice)).toEqual({ ok: true, slug: 'lock-d', released: false, locked: false });
    await service.locks.lock('lock-d', alice);
    events.length = 0;
    expect(await service.locks.unlock('lock-d', alice)).toEqual({ ok: true, slug: 'lock-d', released: true, locked: false });
    expect(events).toEqual([
      { topic: 'md:lock-d', msg: { type: 'lock', slug: 'lock-d', state: 'released', locked: false, holder: 'u_alice' } },
      { topic: 'md:all', msg: { type: 'lock', slug: 'lock-d', state: 'released' } },
    ]);
  });

  it('an expired lock is not released by anyone and reads unlocked', async () => {
    const { clock, service } = await setup('lock-e');
    await service.locks.lock('lock-e', alice);
    clock.advance(LOCK_TTL_MS);
    expect(await service.locks.state('lock-e')).toEqual({ slug: 'lock-e', locked: false });
    expect((await service.locks.unlock('lock-e', bob)).released).toBe(false);
  });

  it('are swept once expired, announced once; a renewed lock stays', async () => {
    const { clock, service, events, store } = await setup('lock-f');
    await service.locks.lock('lock-f', alice);
    clock.advance(LOCK_TTL_MS - 1);
    expect(await service.locks.sweep()).toBe(0);
    // an index entry older than its lock (a renewal on another process) is moved, not swept
    await store.index(K.locks('lock-f'), 'lock-f', T0);
    expect(await service.locks.sweep()).toBe(0);
    expect(await store.indexScore(K.locks('lock-f'), 'lock-f')).toBe(T0 + LOCK_TTL_MS);
    expect((await service.locks.state('lock-f')).locked).toBe(true);
    clock.advance(1);
    events.length = 0;
    expect(await service.locks.sweep()).toBe(1);
    expect(events).toEqual([
      { topic: 'md:lock-f', msg: { type: 'lock', slug: 'lock-f', state: 'expired', locked: false, holder: 'u_alice' } },
      { topic: 'md:all', msg: { type: 'lock', slug: 'lock-f', state: 'expired' } },
    ]);
    expect(await store.indexCount(K.locks('lock-f'))).toBe(0);
    expect(await service.locks.sweep()).toBe(0);
  });

  it('refuse an unknown document', async () => {
    const { service } = await setup('lock-g');
    const e = await refusal(service.locks.lock('lock-nothing', alice));
    expect([e.status, e.code, e.message]).toEqual([404, 'unknown_document', 'no document lock-nothing']);
    expect(e.details).toEqual({ slug: 'lock-nothing' });
  });
});
