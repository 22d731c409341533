import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUS_CHANNELS, createBus, topicChannel, topicPartition, type Bus, type BusMessage } from '../../src/bus.js';
import { historyKey } from '../../src/bus/history.js';
import { keySlot, partitionOf } from '../../src/store/partition.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { waitFor } from '../store/contract.js';

// The Bus on a Redis Cluster: two processes' buses exchange messages over sharded pub/sub, a retained
// topic's history and its announcement are one script on the topic's shard, and a subscriber keeps
// receiving while the slots of its partitions move to another master (subscribed again on the new
// one), in order, never twice; what the move window drops comes back from the history.

const binaries = clusterBinariesOrSkip();

describe.skipIf(!binaries)('Bus on a Redis Cluster', () => {
  let cluster: RedisClusterSetup;
  const stores: RedisStore[] = [];
  const buses: Bus[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    for (const b of buses) await b.close();
    for (const s of stores) await s.close();
    await cluster?.stop();
  });
  const bus = async (origin: string, lingerMs?: number) => {
    const store = await openRedisStore({ target: { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, prefix: 'bus:', partitionCheck: true });
    stores.push(store);
    const b = createBus(store, origin, { lingerMs });
    b.retain('room:*', { size: 1000 });
    await b.start();
    buses.push(b);
    return b;
  };

  it('delivers across processes on every partition, retained and not, exactly once', async () => {
    const a = await bus('a');
    const b = await bus('b');
    const got: BusMessage[] = [];
    b.onMessage((m) => got.push(m));
    const topics = Array.from({ length: 40 }, (_, i) => `room:${i}`);
    expect(new Set(topics.map((t) => partitionOf(historyKey(t)))).size).toBeGreaterThan(10);
    for (const t of [...topics, 'plain:topic']) await b.follow(t);
    for (const t of topics) await a.publish(t, { t });
    await a.publish('plain:topic', 'not retained');
    await waitFor(() => got.length === topics.length + 1, 5000, 'every message at b');
    // each once (topics on different masters arrive over different connections: in no set order)
    const byTopic = (x: [string, number | undefined], y: [string, number | undefined]) => Number(x[0].slice(5)) - Number(y[0].slice(5));
    expect(got.filter((m) => m.topic.startsWith('room:')).map((m): [string, number | undefined] => [m.topic, m.offset]).sort(byTopic)).toEqual(topics.map((t) => [t, 1]));
    expect(got.filter((m) => m.topic === 'plain:topic')).toEqual([{ topic: 'plain:topic', message: 'not retained' }]);
    // the history key and the channel of a topic share its shard
    const s = stores[0]!;
    for (const t of topics) expect(keySlot(s.vk(historyKey(t)))).toBe(keySlot(s.channel(topicChannel(t)).name));
  });

  it('a process SSUBSCRIBEs only the partitions it follows, on their masters, and lets them go after the linger', async () => {
    const a = await bus('follow-a', 200);
    const b = await bus('follow-b');
    const store = stores.at(-2)!;
    /** Sharded subscribers of each bus channel (prefix bus:), summed over the masters, by partition. */
    const shardnumsub = async () => {
      const names = BUS_CHANNELS.map((c) => store.channel(c).name);
      const out = new Map<number, number>();
      for (const m of await cluster.masters()) {
        const c = m.client();
        try {
          const flat = (await c.call('PUBSUB', 'SHARDNUMSUB', ...names)) as (string | number)[];
          for (let i = 0; i < names.length; i++) if (Number(flat[i * 2 + 1]) > 0) out.set(i, (out.get(i) ?? 0) + Number(flat[i * 2 + 1]));
        } finally {
          c.disconnect();
        }
      }
      return out;
    };
    // the partitions the buses of the other tests follow: a's follows are of the other partitions
    const before = await shardnumsub();
    const topics = Array.from({ length: 400 }, (_, i) => `room:f${i}`)
      .filter((t) => !before.has(topicPartition(t)))
      .filter((t, i, all) => all.findIndex((u) => topicPartition(u) === topicPartition(t)) === i)
      .slice(0, 5);
    const releases = await Promise.all(topics.map((t) => a.follow(t)));
    const partitions = [...new Set(topics.map(topicPartition))].sort((x, y) => x - y);
    expect(partitions.length).toBeGreaterThanOrEqual(5);
    expect(a.subscribed()).toEqual(partitions);
    const during = await shardnumsub();
    for (const p of partitions) expect(during.get(p)).toBe(1);
    expect([...during.keys()].filter((p) => !partitions.includes(p)).sort()).toEqual([...before.keys()].sort());
    const got: BusMessage[] = [];
    a.onMessage((m) => got.push(m));
    for (const t of topics) await b.publish(t, { t });
    await waitFor(() => got.length === topics.length, 5000, 'every followed topic at a');
    releases.forEach((r) => r());
    await waitFor(async () => [...(await shardnumsub()).keys()].every((p) => !partitions.includes(p)), 5000, 'every partition let go');
    expect(a.subscribed()).toEqual([]);
    console.log(`cluster: ${topics.length} topics followed, ${partitions.length} sharded subscriptions; none of them after they are released`);
  }, 30_000);

  it('a subscriber keeps receiving while the slots of its partitions move to another master; what the move drops comes back from the history', async () => {
    const a = await bus('mover-a');
    const b = await bus('mover-b');
    const topic = Array.from({ length: 200 }, (_, i) => `room:move:${i}`).find((t) => keySlot(stores[0]!.vk(historyKey(t))) < 1000)!;
    await b.follow(topic);
    const got: BusMessage[] = [];
    b.onMessage((m) => {
      if (m.topic === topic) got.push(m);
    });
    let sent = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        await a.publish(topic, { n: ++sent });
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitFor(() => got.length > 20, 5000, 'messages before the move');
    // move slots 0..1199 (the topic's among them) from their master to another one
    const { to } = await cluster.reshardFromFirst(1200);
    const before = sent;
    await waitFor(() => sent > before + 50, 10_000, 'writes after the move');
    stop = true;
    await writer;
    // resubscribed on the new master: the last message arrives
    await waitFor(() => got.at(-1)?.offset === sent, 10_000, `the last of ${sent} messages at b (have ${got.length})`);
    const offsets = got.map((m) => m.offset!);
    // in order, never twice
    expect(offsets.every((o, i) => i === 0 || o > offsets[i - 1]!)).toBe(true);
    // what the move window dropped (pub/sub keeps nothing for a channel nobody hears) the history
    // gives back from the last offset before the gap, as the hub's live topics recover it
    const firstGap = offsets.findIndex((o, i) => o !== i + 1);
    const missed = sent - got.length;
    if (firstGap >= 0) {
      const h = await b.history(topic, { offset: firstGap, epoch: got[0]!.epoch! });
      expect(h.recovered).toBe(true);
      const all = new Map(got.map((m) => [m.offset!, (m.message as { n: number }).n]));
      for (const p of h.publications) all.set(p.offset, (p.message as { n: number }).n);
      expect([...all.keys()].sort((x, y) => x - y)).toEqual(Array.from({ length: sent }, (_, i) => i + 1));
      expect([...all.entries()].every(([o, n]) => o === n)).toBe(true);
    }
    console.log(`slot move: ${sent} messages, ${missed} missed by the live subscription and recovered from the history`);
    // the topic's shard is now the other master
    const c = cluster.nodes.find((n) => n.port === to)!.client();
    try {
      const slots = (await c.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      const slot = keySlot(stores[0]!.vk(historyKey(topic)));
      expect(slots.find(([lo, hi]) => slot >= lo && slot <= hi)![2][1]).toBe(to);
    } finally {
      c.disconnect();
    }
  }, 90_000);
});
