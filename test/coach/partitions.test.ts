import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { CoachService } from '../../src/coach/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The owner list per partition (docs/partitions.md): each owner's entry in `coach:owners:{#p}` of its
// record's partition, written in the registration's update; the global `coach:owners` of before the
// partitions still read. Real LMDB, the partition check on (as STORE_PARTITION_CHECK=1).
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const T0 = Date.parse('2026-11-22T01:00:00Z');
const actions = [{ id: 'walk', title: '아침 산책', phase: '티' as const, reward: 10 }];

describe('the coaching owner list', () => {
  it('is kept per partition beside each owner, merged newest first, with owners listed before the partitions', async () => {
    const path = tempDir('coach-parts');
    const old = await openLmdbStore({ path, partitionCheck: false });
    // an owner registered before the partitions: its record and the global list entry
    await old.update([], () => ({
      writes: [
        { op: 'set', key: 'coach:owner:before', value: { id: 'before', timeZone: 'Asia/Seoul', actions: [], points: 5, createdAt: new Date(T0 - 1000).toISOString(), updatedAt: new Date(T0 - 1000).toISOString() } },
        { op: 'index', key: 'coach:owners', member: 'before', score: T0 - 1000 },
      ],
      result: undefined,
    }));
    await old.close();
    const store = await openLmdbStore({ path, partitionCheck: true });
    stores.push(store);
    const clock = new ManualClock(T0);
    const coach = new CoachService({ store, clock });
    const ids = Array.from({ length: 12 }, (_, i) => `o${i}`);
    for (const id of ids) {
      clock.advance(1000);
      await coach.register(id, { actions });
    }
    expect(new Set(ids.map((id) => partitionOf(`coach:owner:${id}`))).size).toBeGreaterThan(3);
    const p = partitionOf('coach:owner:o0');
    expect(await store.indexRange(`coach:owners:{#${p}}`)).toContainEqual({ member: 'o0', score: T0 + 1000 });
    const all = await coach.list({ limit: 100, offset: 0 });
    expect(all.total).toBe(13);
    expect(all.owners.map((o) => o.ownerId)).toEqual([...ids].reverse().concat('before'));
    const page = await coach.list({ limit: 3, offset: 10 });
    expect(page.owners.map((o) => o.ownerId)).toEqual(['o1', 'o0', 'before']);
    // the owner of before, registered again, joins its partition's list and is listed once, in place
    await coach.register('before', { actions });
    const again = await coach.list({ limit: 100, offset: 0 });
    expect(again.total).toBe(13);
    expect(again.owners.at(-1)).toMatchObject({ ownerId: 'before', points: 5 });
  });
});
