import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { RewardService } from '../../src/reward/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf } from '../../src/store/partition.js';
import { kst } from './harness.js';

// The zone list per partition (docs/partitions.md): a zone's entry in `reward:zones:{#p}` of its
// record's partition, written in the registration's update; the global `reward:zones` of before the
// partitions still read. Real LMDB, the partition check on for the registrations.
const dirs: string[] = [];
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

describe('cultural zones', () => {
  it('are listed and counted from every partition and from the global list of before', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'maru-zones-'));
    dirs.push(dir);
    const path = join(dir, 'store');
    const old = await openLmdbStore({ path, partitionCheck: false });
    const T = kst('2026-05-04 10:00');
    await old.update([], () => ({
      writes: [
        { op: 'set', key: 'reward:zone:kr-ko-old', value: { id: 'kr-ko-old', country: 'KR', lang: 'ko', name: '옛 마을', key: '옛 마을', members: 0, created_at: T - 1000 } },
        { op: 'index', key: 'reward:zones', member: 'kr-ko-old', score: T - 1000 },
      ],
      result: undefined,
    }));
    await old.close();
    const store = await openLmdbStore({ path, partitionCheck: true });
    const clock = new ManualClock(T);
    const bus = createBus(store, 'zones');
    try {
      const svc = new RewardService({ store, clock, bus });
      const names = ['서울', '부산', '대구', '광주', '대전', '울산', '제주'];
      const ids: string[] = [];
      for (const name of names) {
        clock.advance(1000);
        const z = await svc.culture({ country: 'KR', lang: 'ko', name });
        ids.push(z.id);
      }
      expect(new Set(ids.map((id) => partitionOf(`reward:zone:${id}`))).size).toBeGreaterThan(2);
      const again = await svc.culture({ country: 'KR', lang: 'ko', name: '서울' });
      expect([again.created, again.total_cultures]).toEqual([false, 8]);
      const list = await svc.listZones({ limit: 100 });
      expect(list.total).toBe(8);
      expect(list.zones.map((z) => z.id)).toEqual(['kr-ko-old', ...ids]);
      expect((await svc.listZones({ limit: 2, offset: 1 })).zones.map((z) => z.id)).toEqual(ids.slice(0, 2));
      expect((await svc.stats()).cultures).toBe(8);
    } finally {
      await bus.close();
      await store.close();
    }
  });
});
