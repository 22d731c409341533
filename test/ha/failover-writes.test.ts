import { afterAll, describe, it } from 'vitest';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { failoverBurst } from '../support/failover-burst.js';
import { paymentHubEnv } from '../support/payment.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startSentinelSetup, type SentinelSetup } from '../support/sentinel.js';

// Two hub processes through three Sentinels, REDIS_MIN_REPLICAS=1, a burst of acknowledged writes of
// every kind that matters (test/support/failover-burst.ts) while the primary is killed with -9 and the
// replica promoted. A client retries a 503 as it is told, with the same Idempotency-Key (purchases,
// rental applications, reward credits; a check-in is exactly-once by its code).
// Afterwards every acknowledged write is there, the exactly-once rules hold, the lock still has its
// one holder, and the payment ledger checks out.

const binaries = redisBinariesOrSkip();
const setups: SentinelSetup[] = [];
const hubs: HubProcess[] = [];
let peers: PaymentStandins | undefined;
afterAll(async () => {
  for (const h of hubs) await h.stop('SIGKILL');
  for (const s of setups) await s.stop();
  await peers?.close();
});

describe.skipIf(!binaries)('a failover under a burst of every kind of write', () => {
  it('REDIS_MIN_REPLICAS=1: purchases, rental uploads, check-ins, reward credits, accounts, saves and a lock: 0 lost, 0 doubled, no 500', async () => {
    // the servers as docs/deploy.md sets them up: a primary without a connected replica refuses writes
    // (down-after 2 s: a loaded machine's slow pings must not make the Sentinels fail over twice)
    const setup = await startSentinelSetup({ serverArgs: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'], downAfterMs: 2000 });
    setups.push(setup);
    const secret = newWebhookSecret();
    peers = await startPaymentStandins({ webhookSecret: secret });
    // one DATA_DIR for both: the uploaded files are shared (a shared disk here; S3 in docs/deploy.md)
    const ha = { REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name, REDIS_MIN_REPLICAS: '1', REDIS_PREFIX: 'burst:', LOG_LEVEL: 'info', DATA_DIR: tempDir('ha-burst') };
    for (const name of ['ha-burst-1', 'ha-burst-2']) hubs.push(await startHubProcess(paymentHubEnv(peers, secret, name, { extra: ha }), 60_000));
    const old = (await setup.currentPrimary())!;
    await failoverBurst({
      hubs: hubs as [HubProcess, HubProcess],
      peers,
      fail: async () => {
        await setup.primary.kill('SIGKILL');
        await setup.waitFailover(old);
        await setup.primary.restart();
      },
    });
  }, 400_000);
});
