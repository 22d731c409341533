import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { PresenceManager } from '../../src/presence.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The presence index per partition (docs/partitions.md): a topic is indexed in `<index>:{#p}` of its
// key's partition, in the same update as its entries; the global index of before the partitions is
// still swept. Real LMDB, the partition check on.
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const T0 = 1_000_000_000_000;

describe('the presence index', () => {
  it('is kept per partition of the topic and swept across them, with topics indexed before the partitions', async () => {
    const path = tempDir('presence-parts');
    const old = await openLmdbStore({ path, partitionCheck: false });
    await old.update([], () => ({
      writes: [
        { op: 'set', key: 'presence:before', value: { c0: { id: 'c0', user: 'old', joined: T0, seen: T0 } } },
        { op: 'index', key: 'presence:topics', member: 'before', score: T0 },
      ],
      result: undefined,
    }));
    await old.close();
    const store = await openLmdbStore({ path, partitionCheck: true });
    stores.push(store);
    const clock = new ManualClock(T0);
    const p = new PresenceManager({ store, clock, timeoutMs: 10_000 });
    const topics = ['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'];
    for (const t of topics) await p.add(t, `c-${t}`, { user: 'ann' });
    expect(new Set(topics.map((t) => partitionOf(`presence:${t}`))).size).toBeGreaterThan(2);
    const q = partitionOf('presence:t1');
    expect((await store.indexRange(`presence:topics:{#${q}}`)).map((e) => e.member)).toContain('t1');
    expect(await store.indexCount('presence:topics')).toBe(1);
    await p.remove('t8', 'c-t8');
    expect(await store.indexRange(`presence:topics:{#${partitionOf('presence:t8')}}`)).not.toContainEqual(expect.objectContaining({ member: 't8' }));
    clock.advance(10_001);
    await p.add('t1', 'c-t1', { user: 'ann' }); // renewed: stays
    const swept = await p.sweep();
    expect(swept.map((s) => s.topic)).toEqual(['before', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(swept[0]!.removed.map((e) => e.id)).toEqual(['c0']);
    expect(await store.indexCount('presence:topics')).toBe(0);
    expect(await store.get('presence:before')).toBeUndefined();
    expect((await p.list('t1')).map((e) => e.id)).toEqual(['c-t1']);
    expect(await p.sweep()).toEqual([]);
  });
});
