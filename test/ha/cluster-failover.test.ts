import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { payoutAt, payoutWeekOf } from '../../src/payment/rules.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { keySlot, partitionOf, partitionTag } from '../../src/store/partition.js';
import { openRedisStore } from '../../src/store/redis.js';
import { seedProfitableChallenges } from '../payment/support.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { failoverBurst } from '../support/failover-burst.js';
import { paymentHubEnv } from '../support/payment.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { until } from '../support/wait.js';

// Two hub processes on a Redis Cluster of the test's own (3 masters, a replica each, AOF,
// min-replicas-to-write 1, REDIS_MIN_REPLICAS=1, the partition check on), a burst of acknowledged
// writes of every kind (test/support/failover-burst.ts: purchases, payouts, rental applications with
// uploads, check-ins, reward credits, accounts, document saves, a lock taken before) while the master
// serving the ledger's partition is killed with -9 and its replica promoted: 0 acknowledged lost,
// 0 doubled, no 500, the ledger check green (docs/deploy.md "Redis Cluster").

const binaries = clusterBinariesOrSkip();
const T0 = Date.parse('2026-11-11T12:00:00Z');
const PREFIX = 'cfail:';

describe.skipIf(!binaries)('a Redis Cluster failover under a burst of every kind of write', () => {
  let cluster: RedisClusterSetup | undefined;
  let peers: PaymentStandins | undefined;
  const hubs: HubProcess[] = [];
  afterAll(async () => {
    for (const h of hubs) await h.stop('SIGKILL');
    await cluster?.stop();
    await peers?.close();
  });

  it('kill -9 of the ledger\'s master: every acknowledged write there once, the ledger checks out', async () => {
    cluster = await startRedisCluster({ args: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'], nodeTimeoutMs: 2000 });
    const secret = newWebhookSecret();
    peers = await startPaymentStandins({ webhookSecret: secret });
    // funded, profitable challenges of a finished week, whose payouts are asked for during the burst
    const week = payoutWeekOf(T0);
    expect(payoutAt(week)).toBeLessThan(Date.now());
    const users = Array.from({ length: 8 }, (_, i) => `cfpay${i}`);
    const seed = await openRedisStore({ target: { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, prefix: PREFIX });
    try {
      await seedProfitableChallenges(seed, new ManualClock(T0), peers.prices.map((p) => p.url), users);
    } finally {
      await seed.close();
    }
    const ha = { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS: '1', REDIS_PREFIX: PREFIX, STORE_PARTITION_CHECK: '1', LOG_LEVEL: 'info', DATA_DIR: tempDir('ha-cluster-burst') };
    for (const name of ['ha-cburst-1', 'ha-cburst-2']) hubs.push(await startHubProcess(paymentHubEnv(peers, secret, name, { extra: ha }), 60_000));
    const ledgerSlot = keySlot(`{${partitionTag(partitionOf('pay:acct:escrow'))}}`);
    const victim = await cluster.masterOfSlot(ledgerSlot);
    await failoverBurst({
      hubs: hubs as [HubProcess, HubProcess],
      peers,
      payouts: { week, users },
      fail: async () => {
        await victim.kill('SIGKILL');
        // the replica is promoted once the others see the master fail (node timeout 2 s)
        await until('the ledger\'s slot served by the promoted replica', async () => (await cluster!.masterOfSlot(ledgerSlot).catch(() => victim)).port !== victim.port, 60_000, 200);
        await cluster!.waitOk(60_000);
        // back as the new master's replica, so min-replicas-to-write lets it take writes again
        await victim.restart();
      },
    }).catch((err) => {
      // what the hubs logged as errors, to tell a 500's cause
      for (const h of hubs) console.log(h.output().split('\n').filter((l) => /"level":50/.test(l) && !/store_unavailable/.test(l)).slice(0, 8).join('\n'));
      throw err;
    });
    for (const h of hubs) {
      expect(h.output()).not.toMatch(/CROSSSLOT/);
      expect(h.output()).not.toMatch(/PartitionError/);
    }
  }, 400_000);
});
