import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { redisBinariesOrSkip, startRedisServer, type RedisServerProcess } from '../support/sentinel.js';
import { until, waitFor } from '../support/wait.js';

// The Redis Store when Redis is out of reach or has too few replicas: store_unavailable (503 with
// Retry-After), never a hang past REDIS_OP_TIMEOUT_MS; back by itself, subscriptions included.

const binaries = redisBinariesOrSkip();

async function unavailable(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  const app = err as AppError;
  expect(app.code).toBe('store_unavailable');
  expect(app.status).toBe(503);
  expect((app.details as { retry_after_s: number }).retry_after_s).toBeGreaterThan(0);
  return app;
}

describe.skipIf(!binaries)('REDIS_MIN_REPLICAS: WAIT after every write', () => {
  let redis: RedisServerProcess;
  let store: RedisStore;
  beforeAll(async () => {
    redis = await startRedisServer();
    store = await openRedisStore({ url: redis.url, prefix: 'wait:', minReplicas: 1, waitTimeoutMs: 50 });
  }, 30_000);
  afterAll(async () => {
    await store?.close();
    await redis?.kill();
  });

  it('an update no replica acknowledges is store_unavailable, and the write may have happened', async () => {
    const err = await unavailable(store.update(['credit'], () => ({ writes: [{ op: 'set', key: 'credit', value: 1 }], result: 'ok' })));
    expect(err.details).toMatchObject({ acked: 0, required: 1 });
    expect(err.message).toContain('may have happened');
    // it did: the primary holds it, which is why a retry must be (and is) idempotent
    expect(await store.get('credit')).toBe(1);
  });

  it('an answer read from the state waits too: "exists", a replay or a refusal over a write no replica holds is store_unavailable', async () => {
    // the first try: on the primary, on no replica, answered 503
    await unavailable(store.update(['seat'], () => ({ writes: [{ op: 'set', key: 'seat', value: 'taken' }], result: 'sold' })));
    // the retry finds it; "already sold" from that state would acknowledge a write a failover drops
    await unavailable(store.update(['seat'], ([cur]) => ({ writes: [], result: cur === undefined ? 'free' : 'sold before' })));
    await unavailable(
      store.update(['seat'], ([cur]) => {
        if (cur !== undefined) throw new AppError('conflict', 'seat_taken', 'the seat is taken');
        return { writes: [], result: 'free' };
      }),
    );
  });

  it('set, incr, push and index wait too', async () => {
    await unavailable(store.set('a', 1));
    await unavailable(store.incr('n'));
    await unavailable(store.push('l', 1, 10));
    await unavailable(store.index('z', 'm', 1));
    // reads do not wait
    expect(await store.get('a')).toBe(1);
  });
});

describe.skipIf(!binaries)('REDIS_MIN_REPLICAS with a replica', () => {
  let primary: RedisServerProcess;
  let replica: RedisServerProcess;
  let store: RedisStore;
  beforeAll(async () => {
    primary = await startRedisServer();
    replica = await startRedisServer();
    const c = replica.client();
    await c.call('REPLICAOF', '127.0.0.1', String(primary.port));
    await until('the replica is in sync', async () => /master_link_status:up/.test(await c.info('replication')), 10_000, 50);
    c.disconnect();
    store = await openRedisStore({ url: primary.url, prefix: 'fence:', minReplicas: 1, waitTimeoutMs: 2000 });
  }, 30_000);
  afterAll(async () => {
    await store?.close();
    await replica?.kill();
    await primary?.kill();
  });

  it('answers from the state once the replica holds it: a write, then "exists" and a refusal read from it', async () => {
    expect(await store.update(['seat'], () => ({ writes: [{ op: 'set', key: 'seat', value: 'taken' }], result: 'sold' }))).toBe('sold');
    expect(await store.update(['seat'], ([cur]) => ({ writes: [], result: cur === undefined ? 'free' : 'sold before' }))).toBe('sold before');
    const refused = await store
      .update(['seat'], ([cur]) => {
        if (cur !== undefined) throw new AppError('conflict', 'seat_taken', 'the seat is taken');
        return { writes: [], result: 'free' };
      })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('seat_taken');
    // the replica holds what the answers were read from
    const c = replica.client();
    expect(await c.get('fence:v:seat')).toBe('"taken"');
    c.disconnect();
  });
});

describe.skipIf(!binaries)('Redis out of reach', () => {
  let redis: RedisServerProcess;
  let store: RedisStore;
  beforeAll(async () => {
    redis = await startRedisServer();
    store = await openRedisStore({ url: redis.url, prefix: 'down:', opTimeoutMs: 500 });
  }, 30_000);
  afterAll(async () => {
    await store?.close();
    await redis?.kill();
  });

  it('answers store_unavailable while it is down, and resumes with its data and subscriptions after', async () => {
    await store.set('kept', 'yes');
    const got: string[] = [];
    await store.subscribe('news', (m) => got.push(m));
    await redis.kill('SIGKILL');
    await unavailable(store.get('kept'));
    await unavailable(store.update(['x'], () => ({ writes: [{ op: 'set', key: 'x', value: 1 }], result: 1 })));
    await unavailable(store.publish('news', 'lost'));
    await expect(store.ping()).rejects.toThrow(/redis unavailable/);
    await redis.restart();
    // AOF (everysec) kept the acknowledged write; the connection is back by itself
    await waitFor(async () => (await store.get('kept').catch(() => undefined)) === 'yes', 10_000);
    // the subscriber connection resubscribed by itself
    await waitFor(
      async () => {
        await store.publish('news', 'after').catch(() => undefined);
        return got.includes('after');
      },
      10_000,
    );
    expect(got).not.toContain('lost');
  }, 30_000);
});

describe.skipIf(!binaries)('backup and restore (docs/deploy.md)', () => {
  it('a copy of the AOF directory taken after BGREWRITEAOF restores every acknowledged write on a new server', async () => {
    const { cpSync, mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const source = await startRedisServer({ args: ['--appendfsync', 'always'] });
    const store = await openRedisStore({ url: source.url, prefix: 'backup:' });
    for (let i = 0; i < 50; i++) await store.set(`k${i}`, { i });
    await store.push('list', 'x', 10);
    // the run book's backup: rewrite the AOF, wait for it, copy the directory
    const c = source.client();
    await c.bgrewriteaof();
    await until('the AOF rewrite ends', async () => /aof_rewrite_in_progress:0/.test(await c.info('persistence')) && /aof_rewrite_scheduled:0/.test(await c.info('persistence')), 10_000, 50);
    c.disconnect();
    const backup = mkdtempSync(join(tmpdir(), 'maru-backup-'));
    cpSync(join(source.dir, 'appendonlydir'), join(backup, 'appendonlydir'), { recursive: true });
    await store.close();
    await source.kill();
    // restore: a new server started on the copy
    const restored = await startRedisServer({ dir: backup });
    const again = await openRedisStore({ url: restored.url, prefix: 'backup:' });
    try {
      for (let i = 0; i < 50; i++) expect(await again.get(`k${i}`)).toEqual({ i });
      expect(await again.range('list')).toEqual(['x']);
    } finally {
      await again.close();
      await restored.kill();
    }
  }, 60_000);
});
