import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { redisBinariesOrSkip, startRedisServer, type RedisServerProcess } from '../support/sentinel.js';
import { sleep, until } from '../support/wait.js';

// Redis down for 10 s with no replica: requests that need the store answer 503 store_unavailable with
// Retry-After within REDIS_OP_TIMEOUT_MS (plus the hub's own work), never a 500; /healthz stays 200,
// /readyz is 503; everything resumes by itself when Redis is back (with its AOF).

const OP_TIMEOUT_MS = 1000;
/** The documented bound: REDIS_OP_TIMEOUT_MS for the store, with room for a loaded test machine. */
const BOUND_MS = OP_TIMEOUT_MS * 4;

const binaries = redisBinariesOrSkip();

describe.skipIf(!binaries)('Redis down for 10 s', () => {
  let redis: RedisServerProcess;
  let hub: HubProcess;
  beforeAll(async () => {
    redis = await startRedisServer();
    hub = await startHubProcess({ ...AUTH_TEST_ENV, REDIS_URL: redis.url, REDIS_PREFIX: 'down:', REDIS_OP_TIMEOUT_MS: String(OP_TIMEOUT_MS), DATA_DIR: tempDir('ha-down') }, 60_000);
  }, 90_000);
  afterAll(async () => {
    await hub?.stop('SIGKILL');
    await redis?.kill();
  });

  it('no 500, no request past the bound, readyz not ready, and back by itself', async () => {
    const editor = bearer(await signIn(hub.url, ['editor']));
    const save = (content: string) =>
      fetch(`${hub.url}/api/md/save`, { method: 'POST', headers: { ...editor, 'content-type': 'application/json' }, body: JSON.stringify({ slug: 'down-doc', content }) });
    expect((await save('# before\n')).status).toBe(200);

    await redis.kill('SIGKILL');
    const statuses = new Map<number, number>();
    let slowest = 0;
    const end = Date.now() + 10_000;
    let i = 0;
    while (Date.now() < end) {
      const t0 = performance.now();
      const res = i % 2 ? await save(`# during ${i}\n`) : await fetch(`${hub.url}/api/md/doc/down-doc`);
      slowest = Math.max(slowest, performance.now() - t0);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status === 503) {
        expect(res.headers.get('retry-after')).toBeTruthy();
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('store_unavailable');
      } else await res.arrayBuffer();
      expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
      if (i % 5 === 0) expect((await fetch(`${hub.url}/readyz`)).status).toBe(503);
      i++;
      await sleep(100);
    }
    expect(statuses.get(500)).toBeUndefined();
    expect(statuses.get(503)).toBeGreaterThan(0);
    expect(slowest).toBeLessThan(BOUND_MS);

    await redis.restart();
    await until('the hub is ready again', async () => (await fetch(`${hub.url}/readyz`)).status === 200, 20_000, 100);
    const after = await until('a save succeeds again', async () => ((await save('# after\n')).status === 200 ? true : undefined), 20_000, 100);
    expect(after).toBe(true);
    const doc = (await (await fetch(`${hub.url}/api/md/doc/down-doc`)).json()) as { doc: { content: string } };
    expect(doc.doc.content).toBe('# after\n');
    console.log(JSON.stringify({ redis_down_10s: { statuses: Object.fromEntries(statuses), slowest_ms: Math.round(slowest) } }));
  }, 120_000);
});
