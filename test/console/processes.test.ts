import { describe, expect, it } from 'vitest';
import { OUTBOX_CREATED, OUTBOX_DUE, legacyPartition, outboxKey, recordJson } from '../../src/outbox.js';
import { openRedisStore } from '../../src/store/redis.js';
import { AUTH_TEST_ENV, bearer, login, signIn, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { get, post } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';
import { until } from '../support/wait.js';
import { connectTopics } from '../support/ws.js';

// Two real hub processes (dist/src/main.js) sharing Redis: the console of either one lists both
// nodes and ends a connection the other holds (through the store's pub/sub).
const { redis, prefix: freshPrefix, start } = await redisProcesses();

describe.skipIf(!redis.available)('the console over two hub processes sharing Redis', () => {
  it('lists both nodes from either; a disconnect asked of one ends a socket held by the other; a stopped process leaves the list', async () => {
    const prefix = freshPrefix('console-proc');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('console-proc'), CONSOLE_NODE_MS: '200', ...AUTH_TEST_ENV };
    const [a, b] = await Promise.all([start(env), start(env)]);
    const admin = await login(a!.url, 'admin', TEST_ADMIN_PASSWORD);

    const stateOf = async (url: string) => (await get(url, '/api/console/state', bearer(admin))).body;
    const both = await until('both nodes listed by A', async () => ((await stateOf(a!.url)).nodes.length === 2 ? stateOf(a!.url) : undefined));
    const fromB = await until('both nodes listed by B', async () => ((await stateOf(b!.url)).nodes.length === 2 ? stateOf(b!.url) : undefined));
    expect(both.nodes.map((n: any) => n.id).sort()).toEqual(fromB.nodes.map((n: any) => n.id).sort());
    expect(both.node).not.toBe(fromB.node);
    for (const n of both.nodes) {
      expect(n.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(n.uptime_s).toBeGreaterThanOrEqual(0);
      expect(n.memory.heap_used).toBeGreaterThan(0);
    }
    expect(both.store).toMatchObject({ kind: 'redis', role: 'master' });
    expect(both.store.details.prefix).toBe(prefix);

    // an editor's socket on B, and its topic counted in the state read from A
    const user = `ce${process.pid}`;
    const token = await signIn(b!.url, ['editor'], user);
    const client = await connectTopics(b!.url);
    const closed = new Promise<number>((r) => client.ws.on('close', (code) => r(code)));
    await client.auth(token);
    const listed = await until('the socket listed from A', async () => {
      const r = await get(a!.url, `/api/console/connections?user=${user}`, bearer(admin));
      return r.body.connections.length === 1 ? r.body : undefined;
    });
    const [conn] = listed.connections;
    expect(conn.id.startsWith(`${fromB.node}:ws:`)).toBe(true);
    expect(listed.missing).toEqual([]);

    const r = await post(a!.url, `/api/console/connections/${conn.id}/disconnect`, {}, bearer(admin));
    expect(r.status).toBe(200);
    expect(r.body.disconnected.map((c: any) => c.id)).toEqual([conn.id]);
    expect(await closed).toBe(4403);
    const again = await post(a!.url, `/api/console/connections/${conn.id}/disconnect`, {}, bearer(admin));
    expect([again.status, again.body.error.code]).toEqual([404, 'unknown_connection']);

    // B stops: its node leaves the list at once, and its connection ids are unknown
    await b!.stop();
    await until('one node left', async () => (await stateOf(a!.url)).nodes.length === 1);
    const gone = await post(a!.url, `/api/console/connections/${fromB.node}:ws:1/disconnect`, {}, bearer(admin));
    expect([gone.status, gone.body.error.code]).toEqual([404, 'unknown_connection']);
  }, 60_000);

  it('lists a delivery waiting for its retry and retries it now: it is attempted again at once', async () => {
    const prefix = freshPrefix('console-outbox');
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('console-outbox'), ...AUTH_TEST_ENV };
    const hub = await start(env);
    const admin = await login(hub.url, 'admin', TEST_ADMIN_PASSWORD);
    // a delivery that failed once and waits an hour for its next attempt (a destination no hub delivers
    // to), written in the global layout of before the partitions: the retry moves it into its partition
    const store = await openRedisStore({ url: redis.url, prefix, partitionCheck: false });
    const now = Date.now();
    const id = `console-test-${process.pid}`;
    const rec = { id, dest: 'console-test', payload: { n: 1 }, createdAt: now, attempts: 1, due: now + 3_600_000, lastAttemptAt: now, lastError: 'peer answered 503' };
    await store.update([], () => ({
      writes: [
        { op: 'set', key: outboxKey(id), value: recordJson(rec) },
        { op: 'index', key: OUTBOX_DUE, member: id, score: rec.due },
        { op: 'index', key: OUTBOX_CREATED, member: id, score: now },
      ],
      result: undefined,
    }));
    try {
      const state = (await get(hub.url, '/api/console/state', bearer(admin))).body;
      expect(state.queues.outbox.destinations).toContainEqual({ dest: 'console-test', pending: 1, in_flight: 0, retrying: 1, held: 0, oldest_at: now });
      expect(state.queues.outbox.waiting).toContainEqual(expect.objectContaining({ id, attempts: 1, held: false, last_error: 'peer answered 503' }));
      const r = await post(hub.url, `/api/console/outbox/${id}/retry`, {}, bearer(admin));
      expect(r.status).toBe(200);
      expect(r.body.delivery).toMatchObject({ id, attempts: 1 });
      // the loop attempts it at once (and fails again: no deliverer for that destination)
      await until('a second attempt', async () => ((await store.get(outboxKey(id, legacyPartition(id)))) as any)?.attempts === 2);
    } finally {
      await store.close();
    }
  }, 60_000);
});
