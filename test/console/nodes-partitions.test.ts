import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { NodeRegistry, type NodeInfo } from '../../src/console/nodes.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';

// The hub processes' list per partition (docs/partitions.md): a node's entry in `console:nodes:{#p}`
// of its info's partition, written in the same update; the global `console:nodes` of before the
// partitions still read and cleaned. Real LMDB, the partition check on.
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));
const T0 = Date.parse('2026-11-22T01:00:00Z');
const info = (id: string, at: number): NodeInfo => ({
  id,
  process: `${id}-p`,
  version: '1',
  node_version: 'v20',
  started_at: new Date(T0).toISOString(),
  uptime_s: 1,
  connections: { sockets: 0, streams: 0 },
  memory: { rss: 1, heap_used: 1 },
  topics: [],
  jobs: { admitted: 0, running: 0, waiting: 0, queue_max: 1, running_max: 1 },
  updated_at: at,
});

describe('the node list', () => {
  it('lists nodes of several partitions and of the global list; expired and removed ones leave', async () => {
    const path = tempDir('nodes-parts');
    const old = await openLmdbStore({ path, partitionCheck: false });
    await old.update([], () => ({
      writes: [
        { op: 'set', key: 'console:node:old', value: info('old', T0) as never, ttlMs: 30_000 },
        { op: 'index', key: 'console:nodes', member: 'old', score: T0 + 30_000 },
        { op: 'index', key: 'console:nodes', member: 'gone', score: T0 - 1 },
      ],
      result: undefined,
    }));
    await old.close();
    const store = await openLmdbStore({ path, partitionCheck: true });
    stores.push(store);
    const clock = new ManualClock(T0);
    const nodes = new NodeRegistry(store, clock, 10_000);
    const ids = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
    for (const id of ids) await nodes.publish(info(id, T0));
    expect(new Set(ids.map((id) => partitionOf(`console:node:${id}`))).size).toBeGreaterThan(1);
    expect((await nodes.list()).map((n) => n.id)).toEqual([...ids, 'old'].sort());
    expect(await store.indexCount('console:nodes')).toBe(1); // the expired entry was dropped
    await nodes.remove('h1');
    await nodes.remove('old');
    expect((await nodes.list()).map((n) => n.id)).toEqual(['h2', 'h3', 'h4', 'h5', 'h6']);
    expect(await store.indexCount('console:nodes')).toBe(0);
    clock.advance(30_001);
    await nodes.publish(info('h2', clock.now()));
    expect((await nodes.list()).map((n) => n.id)).toEqual(['h2']);
  });
});
