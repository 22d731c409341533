import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.js';
import { CoachService } from '../../src/coach/service.js';
import { NodeRegistry, type NodeInfo } from '../../src/console/nodes.js';
import { Mailer, mailWrites } from '../../src/mail/mailer.js';
import { Outbox, outboxWrites, type OutboxItem } from '../../src/outbox.js';
import { PresenceManager } from '../../src/presence.js';
import { createBus } from '../../src/bus.js';
import { RewardService } from '../../src/reward/service.js';
import { partitionOf } from '../../src/store/partition.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { until } from '../support/wait.js';

// The services redesigned for the partitioned keyspace (docs/partitions.md), each on its main write
// path, on a Redis Cluster of the test's own (3 masters, 3 replicas) with the partition check on:
// an update spanning aggregates would be refused (PartitionError), one spanning slots by Redis.

const binaries = clusterBinariesOrSkip();
let cluster: RedisClusterSetup;
let n = 0;
const stores: RedisStore[] = [];
async function open(): Promise<RedisStore> {
  const store = await openRedisStore({ target: { cluster: cluster.nodes.map((x) => ({ host: '127.0.0.1', port: x.port })) }, prefix: `s${++n}:`, partitionCheck: true });
  stores.push(store);
  return store;
}
const T0 = Date.parse('2026-11-22T01:00:00Z');

describe.skipIf(!binaries)('services on a Redis Cluster', () => {
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    await cluster?.stop();
  });

  it('the outbox: each business update writes its message in its own partition; the dispatcher delivers them all once', async () => {
    const store = await open();
    const got: string[] = [];
    const outbox = new Outbox({ store, clock: systemClock, deliver: { peer: async (it) => void got.push(it.id) }, retryMinMs: 50, retryMaxMs: 200, pollMs: 50 });
    try {
      const keys = Array.from({ length: 24 }, (_, i) => `test:order:${i}`);
      expect(new Set(keys.map(partitionOf)).size).toBeGreaterThan(8);
      for (const [i, key] of keys.entries()) {
        const item: OutboxItem = { id: `order-${i}`, dest: 'peer', payload: { i }, createdAt: Date.now() };
        await store.update([key], ([cur]) => ({ writes: [{ op: 'set', key, value: (Number(cur ?? 0) + 1) }, ...outboxWrites(item, key)], result: undefined }));
      }
      expect((await outbox.stats()).pending).toBe(24);
      outbox.start();
      await until('delivered', async () => got.length === 24 && (await outbox.stats()).pending === 0, 20_000);
      expect([...got].sort()).toEqual(keys.map((_, i) => `order-${i}`).sort());
      expect((await outbox.stats()).delivered).toBe(24);
    } finally {
      await outbox.stop();
    }
  }, 60_000);

  it('mail: queued beside a business key, delivered by the outbox and kept (no SMTP) in its partition, listed newest first', async () => {
    const store = await open();
    const mailer = new Mailer({ store, clock: systemClock, from: 'maru <noreply@maru.test>' });
    const outbox = new Outbox({ store, clock: systemClock, deliver: { mail: mailer.deliver }, retryMinMs: 50, retryMaxMs: 200, pollMs: 50 });
    try {
      for (const i of [1, 2, 3, 4, 5]) {
        const key = `test:application:${i}`;
        await store.update([key], () => ({ writes: [{ op: 'set', key, value: i }, ...mailWrites(`test:${i}:receipt`, { to: `u${i}@x.kr`, subject: '접수 완료', text: `${i}` }, Date.now() + i, key)], result: undefined }));
      }
      outbox.start();
      const kept = await until('five kept mails', async () => {
        const k = await mailer.kept();
        return k.length === 5 && k;
      }, 20_000);
      expect(new Set(kept.map((m) => m.id))).toEqual(new Set([1, 2, 3, 4, 5].map((i) => `mail:test:${i}:receipt`)));
    } finally {
      await outbox.stop();
      mailer.close();
    }
  }, 60_000);

  it('coach, console nodes and presence: each write is one update of one partition, the lists merged on read', async () => {
    const store = await open();
    const clock = new ManualClock(T0);
    const coach = new CoachService({ store, clock });
    for (const id of ['a', 'b', 'c', 'd', 'e', 'f']) {
      clock.advance(1000);
      await coach.register(id, { actions: [{ id: 'walk', title: '산책', phase: '티', reward: 10 }] });
    }
    await coach.setAction('c', 'walk', '완료');
    const list = await coach.list({ limit: 4, offset: 1 });
    expect([list.total, list.owners.map((o) => o.ownerId)]).toEqual([6, ['e', 'd', 'c', 'b']]);
    expect(list.owners[2]).toMatchObject({ points: 10 });

    const nodes = new NodeRegistry(store, clock, 10_000);
    const info = (id: string): NodeInfo => ({
      id, process: `${id}-p`, version: '1', node_version: 'v20', started_at: new Date(T0).toISOString(), uptime_s: 1,
      connections: { sockets: 0, streams: 0 }, memory: { rss: 1, heap_used: 1 }, topics: [],
      jobs: { admitted: 0, running: 0, waiting: 0, queue_max: 1, running_max: 1 }, updated_at: clock.now(),
    });
    for (const id of ['h1', 'h2', 'h3', 'h4']) await nodes.publish(info(id));
    await nodes.remove('h2');
    expect((await nodes.list()).map((x) => x.id)).toEqual(['h1', 'h3', 'h4']);

    const presence = new PresenceManager({ store, clock, timeoutMs: 5000 });
    for (const t of ['show:1', 'show:2', 'doc:x', 'doc:y']) await presence.add(t, `c-${t}`, { user: 'ann' });
    await presence.remove('doc:x', 'c-doc:x');
    expect(await presence.stats('show:1')).toEqual({ clients: 1, users: 1 });
    clock.advance(5001);
    expect((await presence.sweep()).map((s) => s.topic).sort()).toEqual(['doc:y', 'show:1', 'show:2']);
    expect(await presence.sweep()).toEqual([]);
  }, 60_000);

  it('reward: zones, members, work and exchanges each update one aggregate; the ledgers numbered once, exact at each answer', async () => {
    const store = await open();
    const clock = new ManualClock(Date.parse('2026-05-04T01:00:00Z'));
    const bus = createBus(store, 'reward-cluster');
    try {
      const svc = new RewardService({ store, clock, bus });
      const zones = [];
      for (const name of ['서울', '부산', '대구']) zones.push(await svc.culture({ country: 'KR', lang: 'ko', name }));
      const members = [];
      for (let i = 0; i < 6; i++) members.push(await svc.createMember({ name: `c${i}`, zone: zones[i % 3]!.id }));
      expect(new Set(members.map((m) => partitionOf(`reward:member:${m.id}`))).size).toBeGreaterThan(1);
      const seqs = await Promise.all(members.map((m) => svc.work({ id: m.id, kc: 1, v: 100 }).then((r) => r.seq)));
      expect([...seqs].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6]);
      const x = await svc.exchange({ id: members[0]!.id, amt: 1 });
      expect(x.seq).toBe(7);
      expect(await svc.stats()).toMatchObject({ members: 6, cultures: 3 });
      expect((await svc.rewardLedger()).totals).toMatchObject({ entries: 7, credits: 6, exchanges: 1, units: 6 });
      expect((await svc.zone(zones[0]!.id)).members).toBe(2);
    } finally {
      await bus.close();
    }
  }, 60_000);
});
