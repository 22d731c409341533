import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { freePort, runHubUntilExit } from '../support/sentinel.js';

// The hub on a Redis Cluster (REDIS_CLUSTER_NODES): it starts, creates the admin account and
// serves sign-in, on a cluster of the test's own (3 masters, 3 replicas, AOF); bad cluster settings
// are refused at start with exit 2 naming the setting.

const base = () => ({ DATA_DIR: tempDir('ha-cluster'), REDIS_PREFIX: 'hc:' });

describe('REDIS_CLUSTER_NODES refusals that need no cluster', () => {
  it.each([['host'], ['127.0.0.1:7000,127.0.0.1'], ['127.0.0.1:99999']])('REDIS_CLUSTER_NODES=%s does not parse: exit 2 naming it', (value) => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_CLUSTER_NODES: value });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_CLUSTER_NODES');
    expect(r.output).toContain('host:port');
  });

  it('with REDIS_SENTINELS, or a prefix holding a brace: exit 2 naming the setting', () => {
    const both = runHubUntilExit(MAIN, { ...base(), REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm' });
    expect(both.code).toBe(2);
    expect(both.output).toMatch(/REDIS_CLUSTER_NODES: cannot be set with REDIS_SENTINELS/);
    const brace = runHubUntilExit(MAIN, { ...base(), REDIS_CLUSTER_NODES: '127.0.0.1:7000', REDIS_PREFIX: 'a{b}:' });
    expect(brace.code).toBe(2);
    expect(brace.output).toMatch(/REDIS_PREFIX: must not hold \{ or \}/);
  });

  it('a cluster that does not answer: exit 2 naming REDIS_CLUSTER_NODES', async () => {
    const port = await freePort();
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_CLUSTER_NODES: `127.0.0.1:${port}` });
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/REDIS_CLUSTER_NODES: cannot reach Redis/);
  });
});

const binaries = clusterBinariesOrSkip();

describe.skipIf(!binaries)('a hub on a Redis Cluster', () => {
  let cluster: RedisClusterSetup;
  const hubs: HubProcess[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    for (const h of hubs) await h.stop('SIGKILL');
    await cluster?.stop();
  });

  it('starts with REDIS_MIN_REPLICAS=1, creates admin, signs in on either of two hubs, and lists accounts', async () => {
    const env = { ...base(), REDIS_CLUSTER_NODES: cluster.seeds, REDIS_MIN_REPLICAS: '1', ADMIN_PASSWORD: 'cluster-admin-pw', STORE_PARTITION_CHECK: '1' };
    const a = await startHubProcess(env, 40_000);
    hubs.push(a);
    const b = await startHubProcess({ ...env, DATA_DIR: tempDir('ha-cluster') }, 40_000);
    hubs.push(b);
    const login = async (hub: HubProcess, password: string) =>
      fetch(`${hub.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'admin', password }) });
    const wrong = await login(a, 'not-the-password');
    expect(wrong.status).toBe(401);
    const ok = await login(a, 'cluster-admin-pw');
    expect(ok.status).toBe(200);
    const { token } = (await ok.json()) as { token: string };
    // the token written through one hub is read through the other
    const me = await fetch(`${b.url}/api/auth/me`, { headers: { authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { identity: { id: string } }).identity.id).toBe('admin');
    const made = await fetch(`${b.url}/api/auth/accounts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user: 'kim', roles: ['staff'], password: 'kim-password-1' }),
    });
    expect(made.status).toBeLessThan(300);
    const list = await fetch(`${a.url}/api/auth/accounts`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await list.json()) as { accounts: { user: string }[] }).accounts.map((x) => x.user)).toEqual(['admin', 'partner', 'kim']);
    const readyz = await fetch(`${a.url}/readyz`);
    expect(readyz.status).toBe(200);
    // nothing reaches Redis across slots (BullMQ's keys share its hash tag; the Store refuses first);
    // the identity model keeps every update in one partition (other services' refusals are listed
    // in docs/partitions.md)
    for (const hub of [a, b]) {
      expect(hub.output()).not.toMatch(/CROSSSLOT/);
      expect(hub.output().split('\n').filter((l) => /PartitionError/.test(l) && /auth:/.test(l))).toEqual([]);
    }
  }, 120_000);
});
