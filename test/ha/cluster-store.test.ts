import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { openStore } from '../../src/store/open.js';
import { keySlot, PARTITIONS, partitionKey, partitionOf, PartitionError, SLOTS_PER_PARTITION } from '../../src/store/partition.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { StartupRefusal } from '../../src/store/redis-startup.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { freePort } from '../support/sentinel.js';
import { partitionContract, storeContract, waitFor } from '../store/contract.js';
import { oneAggregate } from '../store/one-aggregate.js';

// The Store on a Redis Cluster of the test's own (3 masters, 3 replicas, AOF): the whole contract
// (its multi-key updates in one aggregate), the partition rule, the layout (one Store key's Redis
// keys in one slot, partitions spread over the masters), WAIT on the master that took the write,
// sharded pub/sub, and the start-up checks.

const binaries = clusterBinariesOrSkip();
let cluster: RedisClusterSetup;
let n = 0;
const seeds = () => cluster.nodes.map((x) => ({ host: '127.0.0.1', port: x.port }));
const open = (opts: { partitionCheck?: boolean; minReplicas?: number; prefix?: string } = {}) =>
  openRedisStore({ target: { cluster: seeds() }, prefix: opts.prefix ?? `c${++n}:`, partitionCheck: opts.partitionCheck, minReplicas: opts.minReplicas });

/** The port of the replica following the master on `masterPort`. */
/** The port of the node replicating the master on `masterPort`. */
const replicaOf = async (masterPort: number): Promise<number> => (await cluster.replicaOf(cluster.nodes.find((x) => x.port === masterPort)!)).port;
/** The port of the master serving `slot` now. */
const masterOfSlot = async (slot: number): Promise<number> => (await cluster.masterOfSlot(slot)).port;

describe.skipIf(!binaries)('Store on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  storeContract('redis cluster, one aggregate, partition check on', async () => oneAggregate(await open({ partitionCheck: true })));
  partitionContract('redis cluster', () => open({ partitionCheck: true }));

  describe('layout and routing', () => {
    let store: RedisStore;
    beforeAll(async () => {
      store = await open({ prefix: 'layout:' });
    });
    afterAll(async () => {
      await store.close();
    });

    it("one Store key's value, list and index share the slot of its partition; one aggregate's keys share it too", async () => {
      for (const key of ['auth:account:admin', 'auth:account:admin:tokens', 'reward:member:m_1', 'odd {key}', partitionKey('auth:accounts', 5)]) {
        const slots = new Set([store.vk(key), store.lk(key), store.zk(key)].map(keySlot));
        expect(slots.size).toBe(1);
        expect(Math.floor([...slots][0]! / SLOTS_PER_PARTITION)).toBe(partitionOf(key));
      }
      expect(keySlot(store.vk('auth:account:admin'))).toBe(keySlot(store.zk('auth:account:admin:tokens')));
      await store.set('auth:account:admin', 1);
      await store.push('auth:account:admin', 2, 5);
      await store.index('auth:account:admin', 'm', 3);
      // the keys really are where the layout says, under the partition's tag
      const c = store.commands as import('ioredis').Cluster;
      expect(await c.get(store.vk('auth:account:admin'))).toBe('1');
      expect(store.vk('auth:account:admin')).toMatch(/^layout:\{\d+\.\d+\}v:auth:account:admin$/);
      expect(await store.del('auth:account:admin')).toBe(true);
      expect(await c.exists(store.vk('auth:account:admin'), store.lk('auth:account:admin'), store.zk('auth:account:admin'))).toBe(0);
    });

    it('keys of many aggregates spread over every master; getMany reads across slots in order', async () => {
      const keys = Array.from({ length: 300 }, (_, i) => `t:item:${i}`);
      await Promise.all(keys.map((k, i) => store.set(k, i)));
      expect(await store.getMany([...keys, 'missing', keys[0]!])).toEqual([...keys.map((_, i) => i), undefined, 0]);
      const perMaster = new Map<number, number>();
      for (const k of keys) {
        const port = await masterOfSlot(keySlot(store.vk(k)));
        perMaster.set(port, (perMaster.get(port) ?? 0) + 1);
      }
      expect(perMaster.size).toBe(3);
      for (const count of perMaster.values()) expect(count).toBeGreaterThanOrEqual(300 * 0.2);
    });

    it('an update spanning partitions is a PartitionError, not CROSSSLOT, and writes nothing', async () => {
      const [a, b] = ['t:x:1', Array.from({ length: 50 }, (_, i) => `t:x:${i + 2}`).find((k) => partitionOf(k) !== partitionOf('t:x:1'))!];
      await expect(store.update([a, b], () => ({ writes: [], result: null }))).rejects.toThrow(PartitionError);
      await expect(store.update([a], () => ({ writes: [{ op: 'set', key: b, value: 1 }], result: null }))).rejects.toThrow(/spans partitions/);
      expect(await store.get(b)).toBeUndefined();
    });

    it('every partition can be written, drawn from and published on', async () => {
      const got: string[] = [];
      const other = await open({ prefix: 'layout:' });
      const offs = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => other.subscribe(partitionKey('bus', p), (m) => got.push(m))));
      for (let p = 0; p < PARTITIONS; p++) {
        const r = await store.update(
          [partitionKey('t:seq', p)],
          () => ({
            writes: [
              { op: 'set', key: `${partitionKey('t:item', p)}:\u0000#0\u0000`, value: p },
              { op: 'publish', key: partitionKey('bus', p), message: String(p) },
            ],
            result: p,
          }),
          { draw: [partitionKey('t:seq', p)] },
        );
        expect(r.drawn).toEqual([1]);
      }
      await waitFor(() => got.length === PARTITIONS, 5000, 'a message on every partition');
      expect(got.map(Number).sort((x, y) => x - y)).toEqual(Array.from({ length: PARTITIONS }, (_, p) => p));
      await Promise.all(offs.map((off) => off()));
      await other.close();
    });
  });

  it('REDIS_MIN_REPLICAS: the WAIT goes to the master that took the write; a master without its replica refuses, the others write', async () => {
    const store = await open({ minReplicas: 1, prefix: 'wait:' });
    // one key per master
    const byMaster = new Map<number, string>();
    for (let i = 0; byMaster.size < 3; i++) {
      const k = `t:w:${i}`;
      const port = await masterOfSlot(keySlot(store.vk(k)));
      if (!byMaster.has(port)) byMaster.set(port, k);
    }
    for (const k of byMaster.values()) {
      expect(await store.update([k], () => ({ writes: [{ op: 'set', key: k, value: 1 }], result: 'ok' }))).toBe('ok');
    }
    const [victim, victimKey] = [...byMaster.entries()][0]!;
    const replicaPort = await replicaOf(victim);
    const replica = cluster.nodes.find((x) => x.port === replicaPort)!;
    await replica.kill();
    try {
      await expect(store.set(victimKey, 2)).rejects.toMatchObject({ code: 'store_unavailable' });
      await expect(store.update([victimKey], () => ({ writes: [{ op: 'set', key: victimKey, value: 3 }], result: null }))).rejects.toMatchObject({
        code: 'store_unavailable',
      });
      for (const [port, k] of byMaster) {
        if (port === victim) continue;
        expect(await store.update([k], () => ({ writes: [{ op: 'set', key: k, value: 4 }], result: 'ok' }))).toBe('ok');
        expect(await store.get(k)).toBe(4);
      }
    } finally {
      await replica.restart();
      await store.close();
    }
    await waitFor(async () => {
      const c = cluster.nodes.find((x) => x.port === victim)!.client();
      try {
        return /slave0:.*state=online/.test(await c.info('replication'));
      } finally {
        c.disconnect();
      }
    }, 30_000, 'the replica back in sync');
  }, 60_000);

  describe('start-up checks (openStore)', () => {
    const cfg = (extra: Record<string, unknown> = {}) => ({ DATA_DIR: '/nonexistent', REDIS_PREFIX: `s${++n}:`, REDIS_CLUSTER_NODES: seeds(), ...extra });
    const refusal = async (p: Promise<unknown>): Promise<StartupRefusal> => {
      const err = await p.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(StartupRefusal);
      return err as StartupRefusal;
    };

    it('a healthy cluster with AOF opens; describe says cluster, its masters and replicas', async () => {
      const warnings: string[] = [];
      const store = await openStore(cfg({ REDIS_MIN_REPLICAS: 1 }), (w) => warnings.push(w));
      const state = await store.describe!();
      expect(state).toMatchObject({ kind: 'redis', role: 'cluster', replicas: 1, min_replicas: 1 });
      expect(state.details.masters).toBe('3');
      expect(warnings).toEqual([]);
      await store.close();
    });

    it('REDIS_MIN_REPLICAS above the replicas of a master: refused naming REDIS_MIN_REPLICAS', async () => {
      const err = await refusal(openStore(cfg({ REDIS_MIN_REPLICAS: 2 })));
      expect(err.setting).toBe('REDIS_MIN_REPLICAS');
      expect(err.message).toMatch(/has 1 replica\(s\) online/);
    });

    it('unreachable seeds: refused naming REDIS_CLUSTER_NODES', async () => {
      const port = await freePort();
      const err = await refusal(openStore(cfg({ REDIS_CLUSTER_NODES: [{ host: '127.0.0.1', port }] })));
      expect(err.setting).toBe('REDIS_CLUSTER_NODES');
      expect(err.message).toMatch(/cannot reach/);
    }, 20_000);

    it('a cluster node given as REDIS_URL: refused naming REDIS_CLUSTER_NODES', async () => {
      const err = await refusal(openStore({ DATA_DIR: '/nonexistent', REDIS_PREFIX: 'u:', REDIS_URL: `redis://127.0.0.1:${cluster.nodes[0]!.port}` }));
      expect(err.setting).toBe('REDIS_CLUSTER_NODES');
    });

    it('a node without AOF: refused naming REDIS_DURABILITY, unless REDIS_DURABILITY=none (then warned)', async () => {
      const node = cluster.nodes[4]!.client();
      await node.config('SET', 'appendonly', 'no');
      try {
        const err = await refusal(openStore(cfg()));
        expect(err.setting).toBe('REDIS_DURABILITY');
        expect(err.message).toContain(`127.0.0.1:${cluster.nodes[4]!.port}`);
        const warnings: string[] = [];
        const store = await openStore(cfg({ REDIS_DURABILITY: 'none' }), (w) => warnings.push(w));
        expect(warnings.join('\n')).toMatch(/REDIS_DURABILITY=none/);
        await store.close();
      } finally {
        await node.config('SET', 'appendonly', 'yes');
        node.disconnect();
      }
    });

    it('uncovered slots: refused naming REDIS_CLUSTER_NODES', async () => {
      const slot = 100;
      const port = await masterOfSlot(slot);
      const m = cluster.nodes.find((x) => x.port === port)!;
      const clients: Redis[] = cluster.nodes.map((x) => x.client());
      try {
        // forget the slot on every node, so no one serves it
        await Promise.all(clients.map((c) => c.call('CLUSTER', 'DELSLOTS', String(slot)).catch(() => undefined)));
        await waitFor(async () => /cluster_state:fail/.test(String(await clients[0]!.call('CLUSTER', 'INFO'))), 10_000, 'the cluster to see the slot uncovered');
        const err = await refusal(openStore(cfg()));
        expect(err.setting).toBe('REDIS_CLUSTER_NODES');
        expect(err.message).toMatch(/not serving every slot|cannot reach/);
      } finally {
        const mc = m.client();
        await mc.call('CLUSTER', 'ADDSLOTS', String(slot)).catch(() => undefined);
        mc.disconnect();
        for (const c of clients) c.disconnect();
        await cluster.waitOk();
      }
    }, 40_000);
  });
});
