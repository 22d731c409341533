import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { freePort, redisBinariesOrSkip, runHubUntilExit, startRedisServer, startSentinelSetup, type RedisServerProcess, type SentinelSetup } from '../support/sentinel.js';

// The hub refuses, at start and with exit code 2, a Redis that cannot keep what it acknowledges or a
// Redis setting it cannot use; the message names the setting. Every Redis here is the test's own.

const base = () => ({ DATA_DIR: tempDir('ha-start'), REDIS_PREFIX: 'ha:' });

describe('start-up refusals that need no Redis', () => {
  it.each([
    ['host', 'REDIS_SENTINELS'],
    ['127.0.0.1:26379,127.0.0.1', 'REDIS_SENTINELS'],
    ['127.0.0.1:99999', 'REDIS_SENTINELS'],
  ])('REDIS_SENTINELS=%s does not parse: exit 2 naming %s', (value, setting) => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: value, REDIS_SENTINEL_NAME: 'm' });
    expect(r.code).toBe(2);
    expect(r.output).toContain(setting);
    expect(r.output).toContain('host:port');
  });

  it('REDIS_SENTINELS without REDIS_SENTINEL_NAME: exit 2 naming REDIS_SENTINEL_NAME', () => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: '127.0.0.1:26379' });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_SENTINEL_NAME');
  });

  it('Sentinels that do not answer: exit 2 naming REDIS_SENTINELS', async () => {
    const port = await freePort();
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: `127.0.0.1:${port}`, REDIS_SENTINEL_NAME: 'm' });
    expect(r.code).toBe(2);
    expect(r.output).toMatch(/REDIS_SENTINELS: no Sentinel answered/);
  });

  it('a Redis that does not answer: exit 2 naming REDIS_URL', async () => {
    const port = await freePort();
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_URL: cannot reach Redis');
  });
});

const binaries = redisBinariesOrSkip();

describe.skipIf(!binaries)('durability at start', () => {
  let noAof: RedisServerProcess;
  let aof: RedisServerProcess;
  let renamed: RedisServerProcess;
  const hubs: HubProcess[] = [];
  beforeAll(async () => {
    [noAof, aof, renamed] = await Promise.all([
      startRedisServer({ appendonly: false }),
      startRedisServer({ appendonly: true }),
      startRedisServer({ appendonly: true, args: ['--rename-command', 'CONFIG', ''] }),
    ]);
  }, 30_000);
  afterAll(async () => {
    for (const h of hubs) await h.stop('SIGKILL');
    await Promise.all([noAof, aof, renamed].map((r) => r?.kill()));
  });

  it('a Redis without AOF: exit 2 naming appendonly and REDIS_DURABILITY', () => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_URL: noAof.url });
    expect(r.code).toBe(2);
    expect(r.output).toContain('appendonly no');
    expect(r.output).toContain('appendonly yes');
    expect(r.output).toContain('REDIS_DURABILITY=none');
  });

  it('REDIS_DURABILITY=none starts on it, with a warning at every start', async () => {
    for (let i = 0; i < 2; i++) {
      const hub = await startHubProcess({ ...base(), REDIS_URL: noAof.url, REDIS_DURABILITY: 'none' });
      hubs.push(hub);
      const res = await fetch(`${hub.url}/readyz`);
      expect(res.status).toBe(200);
      expect(hub.output()).toContain('REDIS_DURABILITY=none');
      expect(hub.output()).toContain('loses acknowledged writes');
      expect(await hub.stop(), hub.output()).toBe(0);
    }
  }, 60_000);

  it('a Redis with AOF starts without the durability warning', async () => {
    const hub = await startHubProcess({ ...base(), REDIS_URL: aof.url });
    hubs.push(hub);
    expect((await fetch(`${hub.url}/readyz`)).status).toBe(200);
    expect(hub.output()).not.toContain('REDIS_DURABILITY=none');
    expect(hub.output()).toContain('has no replica');
    expect(await hub.stop(), hub.output()).toBe(0);
  }, 30_000);

  it('CONFIG renamed away: AOF read from INFO persistence', async () => {
    const hub = await startHubProcess({ ...base(), REDIS_URL: renamed.url });
    hubs.push(hub);
    expect((await fetch(`${hub.url}/readyz`)).status).toBe(200);
    expect(await hub.stop(), hub.output()).toBe(0);
  }, 30_000);

  it('REDIS_MIN_REPLICAS larger than the replicas online: exit 2 naming REDIS_MIN_REPLICAS', () => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_URL: aof.url, REDIS_MIN_REPLICAS: '1' });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_MIN_REPLICAS=1 but');
    expect(r.output).toContain('0 replica(s) online');
  });
});

describe.skipIf(!binaries)('Sentinel at start', () => {
  let setup: SentinelSetup;
  const hubs: HubProcess[] = [];
  beforeAll(async () => {
    setup = await startSentinelSetup();
  }, 60_000);
  afterAll(async () => {
    for (const h of hubs) await h.stop('SIGKILL');
    await setup?.stop();
  });

  it('an unknown master name: exit 2 naming REDIS_SENTINEL_NAME', () => {
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: 'nobody' });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_SENTINEL_NAME: no Sentinel in REDIS_SENTINELS monitors a master named "nobody"');
  });

  it('starts through the Sentinels with REDIS_MIN_REPLICAS=1, and refuses 2', async () => {
    const hub = await startHubProcess({ ...base(), REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name, REDIS_MIN_REPLICAS: '1' });
    hubs.push(hub);
    expect((await fetch(`${hub.url}/readyz`)).status).toBe(200);
    expect(await hub.stop(), hub.output()).toBe(0);
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name, REDIS_MIN_REPLICAS: '2' });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_MIN_REPLICAS=2 but');
  }, 30_000);
});

describe.skipIf(!binaries)('a Sentinel that sees no primary', () => {
  let setup: SentinelSetup;
  beforeAll(async () => {
    setup = await startSentinelSetup();
    // the replica goes too, so no failover can give a new primary; the Sentinels mark the master down
    await setup.replica.kill();
    await setup.primary.kill();
  }, 60_000);
  afterAll(async () => {
    await setup?.stop();
  });

  it('exit 2 naming REDIS_SENTINELS', async () => {
    // down-after-milliseconds is 1 s: the Sentinels flag the master s_down after it
    await new Promise((r) => setTimeout(r, 2500));
    const r = runHubUntilExit(MAIN, { ...base(), REDIS_SENTINELS: setup.sentinelList, REDIS_SENTINEL_NAME: setup.name });
    expect(r.code).toBe(2);
    expect(r.output).toContain('REDIS_SENTINELS: the Sentinels see no primary up');
  }, 30_000);
});
