import { afterAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV } from '../support/auth.js';
import { call, get, until } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startSentinelSetup, type SentinelSetup } from '../support/sentinel.js';

// A trading grid spread over two hub processes through the BullMQ chunk queue, on Redis behind
// three Sentinels, while the primary is killed with -9 and the replica promoted: the queue's
// connections follow the Sentinels to the new primary, the chunks go on, and the answer is the one
// a single process computes without Redis, byte for byte.

const binaries = redisBinariesOrSkip();
const hubs: HubProcess[] = [];
const setups: SentinelSetup[] = [];
afterAll(async () => {
  for (const h of hubs) await h.stop('SIGKILL');
  for (const s of setups) await s.stop();
});

const ENV = { TRADING_WORKERS: '1', TRADING_CHUNK_LOCK_MS: '1000', TRADING_CHUNKS: '32', ...AUTH_TEST_ENV };
const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);
/** 240 ema_cross combinations on 300,000 candles, in 30 chunks of 8. */
const grid = (job_id: string) => ({ symbol: 'NQ', timeframe: '1m', count: 300_000, seed: 11, strategy: 'ema_cross', objective: 'net_profit', job_id, grid: { fast: range(2, 12), slow: range(30, 20) } });
const queueStats = async (base: string) => (await get(base, '/api/program/jobs')).body.queue as { chunks: number; claimed: number; served: number };

describe.skipIf(!binaries)('the trading chunk queue across a failover', () => {
  it('a grid spread over two processes completes with the single-process answer', async () => {
    const alone = await startHubProcess({ ...ENV, DATA_DIR: tempDir('queue-fo-ref') }, 60_000);
    hubs.push(alone);
    const ref = await call(alone.url, 'POST', '/api/program/optimize', grid('ref'));
    expect(ref.status).toBe(200);
    await alone.stop();
    hubs.splice(0);

    const setup = await startSentinelSetup({ serverArgs: ['--min-replicas-to-write', '1', '--min-replicas-max-lag', '10'] });
    setups.push(setup);
    const env = { ...ENV, REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name, REDIS_MIN_REPLICAS: '1', REDIS_PREFIX: 'queue-fo:' };
    hubs.push(await startHubProcess({ ...env, DATA_DIR: tempDir('queue-fo-a') }, 60_000), await startHubProcess({ ...env, DATA_DIR: tempDir('queue-fo-b') }, 60_000));
    const [a, b] = hubs as [HubProcess, HubProcess];
    const old = (await setup.currentPrimary())!;
    let settled = false;
    const answer = call(a.url, 'POST', '/api/program/optimize', grid('across-failover')).finally(() => (settled = true));
    await until('b runs chunks of a\'s job', async () => (await queueStats(b.url)).served >= 1, 60_000);
    await setup.primary.kill('SIGKILL');
    expect(settled).toBe(false); // the job was still running when the primary died
    await setup.waitFailover(old);
    await setup.primary.restart();
    const r = await answer;
    expect(r.status).toBe(200);
    expect(r.text).toBe(ref.text);
    expect((await queueStats(a.url)).chunks).toBe(30);
  }, 240_000);
});
