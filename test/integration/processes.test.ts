import { afterAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, bearer, login, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { get, post } from '../support/http.js';
import { redisOrSkip, uniquePrefix, deletePrefix } from '../support/redis.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

// A fixed day inside the plan (S0), so the daily unit cap is predictable.
const CLOCK_START = '2026-11-21T12:00:00+09:00';
const redis = await redisOrSkip();
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const started: HubProcess[] = [];
afterAll(async () => {
  for (const p of started) await p.stop('SIGKILL');
});

async function start(env: Record<string, string>): Promise<HubProcess> {
  const p = await startHubProcess({ CLOCK_START, ...AUTH_TEST_ENV, ...env });
  started.push(p);
  return p;
}


/** Creates a zone and a member, credits 2 units, returns the member id and its record. */
async function seed(hub: HubProcess, zoneName: string) {
  const op = bearer(await login(hub.url, 'admin', TEST_ADMIN_PASSWORD));
  const zone = (await get('', `${hub.url}/culture?country=KR&lang=ko&name=${zoneName}`, op)).body.id;
  const id = (await post('', `${hub.url}/api/reward/members`, { name: 'restart', zone }, op)).body.id as string;
  const work = await get('', `${hub.url}/work?id=${id}&kc=2&v=120`);
  expect(work.status).toBe(200);
  const member = (await get('', `${hub.url}/member?id=${id}`)).body;
  expect(member.kc).toBe(2);
  return { id, member };
}

describe('hub process', () => {
  it('refuses to start on the uWebSockets.js JavaScript fallback', async () => {
    await expect(startHubProcess({ DATA_DIR: tempDir('fallback'), UWS_USE_FALLBACK: '1' })).rejects.toThrow(
      /hub exited with 1[\s\S]*native binary/,
    );
  });

  it('refuses an invalid configuration with exit code 2', async () => {
    await expect(startHubProcess({ PORT: 'eighty' })).rejects.toThrow(/exited with 2[\s\S]*PORT/);
  });

  it('keeps state across a graceful restart and closes sockets with 1001 (LMDB)', async () => {
    const dir = tempDir('restart');
    const a = await start({ DATA_DIR: dir });
    const { id, member } = await seed(a, 'lmdb-restart');
    const ws = await connectTopics(a.url);
    const closed = new Promise<number>((r) => ws.ws.on('close', (code) => r(code)));
    expect(await a.stop('SIGTERM')).toBe(0);
    expect(await closed).toBe(1001);
    const b = await start({ DATA_DIR: dir });
    expect((await get('', `${b.url}/member?id=${id}`)).body).toEqual(member);
    expect(await b.stop()).toBe(0);
  });

  it('keeps an acknowledged credit through kill -9 (LMDB)', async () => {
    const dir = tempDir('kill9');
    const a = await start({ DATA_DIR: dir });
    const { id } = await seed(a, 'lmdb-kill');
    const credit = await get('', `${a.url}/work?id=${id}&kc=1&v=100`);
    expect(credit.status).toBe(200);
    await a.stop('SIGKILL');
    const b = await start({ DATA_DIR: dir });
    const after = (await get('', `${b.url}/member?id=${id}`)).body;
    expect(after.kc).toBe(3);
    expect(after.ru).toBeGreaterThan(0);
  });
});

describe.skipIf(!redis.available)('hub processes on Redis', () => {
  const env = () => {
    const prefix = uniquePrefix('proc');
    prefixes.push(prefix);
    return { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('redis-proc') };
  };

  it('keeps state across a restart (Redis)', async () => {
    const e = env();
    const a = await start(e);
    const { id, member } = await seed(a, 'redis-restart');
    expect(await a.stop()).toBe(0);
    const b = await start(e);
    expect((await get('', `${b.url}/member?id=${id}`)).body).toEqual(member);
  });

  it('delivers a message published through one process to a WebSocket subscriber of the other', async () => {
    const e = env();
    const [a, b] = await Promise.all([start(e), start(e)]);
    const onB = await connectTopics(b.url);
    await onB.subscribe('reward');
    const onA = await connectTopics(a.url);
    await onA.subscribe('reward');

    const op = bearer(await login(a.url, 'admin', TEST_ADMIN_PASSWORD));
    const created = await get('', `${a.url}/culture?country=KR&lang=ko&name=two-process`, op);
    expect(created.status).toBe(200);
    const seenOnB = await onB.next();
    expect(seenOnB).toMatchObject({ type: 'message', topic: 'reward', data: { type: 'culture', id: created.body.id } });
    // the publishing process delivers to its own subscriber exactly once
    expect(await onA.next()).toMatchObject({ data: { type: 'culture', id: created.body.id } });
    await expect(onA.next(300)).rejects.toThrow(/no frame/);

    // shared state: a member created through A is read through B
    const id = (await post('', `${a.url}/api/reward/members`, { name: 'shared', zone: created.body.id }, op)).body.id;
    expect((await get('', `${b.url}/member?id=${id}`)).status).toBe(200);
    onA.close();
    onB.close();
  });
});
