import { execFile, execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import pino from 'pino';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthService } from '../../src/auth/service.js';
import { createBus } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { outboxWrites } from '../../src/outbox.js';
import { checkLedger } from '../../src/payment/check.js';
import { availableOf, readAccount, userAccount } from '../../src/payment/ledger.js';
import { migrate } from '../../src/store/migrate.js';
import { openRedisStore, type RedisStore } from '../../src/store/redis.js';
import { describeTarget } from '../../src/store/redis-connection.js';
import { TicketService } from '../../src/ticket/service.js';
import { clusterBinariesOrSkip, startRedisCluster, type RedisClusterSetup } from '../support/cluster.js';
import { deposit, passedChallenge } from '../payment/support.js';
import { tempDir } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

// Moving from one Redis primary to a cluster (docs/deploy.md): the hub's services write on one Redis
// (a test prefix on 127.0.0.1:6379); the migration command counts, copies (resuming an interrupted
// copy), verifies; a Store on the cluster then reads everything back, TTLs kept. Bad settings are
// refused with exit 2, naming the setting.

const ROOT = resolve(import.meta.dirname, '../..');
const CLI = resolve(ROOT, 'dist/src/store/cli.js');
const SOURCES = ['src/store/cli.ts', 'src/store/migrate.ts', 'src/store/redis.ts', 'src/store/partition.ts'].map((s) => resolve(ROOT, s));

const binaries = clusterBinariesOrSkip();
const redis = await redisOrSkip();
const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-12-01T10:00:00Z');

function run(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', DATA_DIR: tempDir('migrate-cli'), ...env } }, (err, stdout, stderr) => {
      done({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

describe.skipIf(!binaries || !redis.available)('migrating one Redis into a Redis Cluster', () => {
  let cluster: RedisClusterSetup;
  const prefix = uniquePrefix('migrate');
  let source: RedisStore;
  const opened: RedisStore[] = [];
  let env: Record<string, string>;
  beforeAll(async () => {
    const fresh = () => existsSync(CLI) && statSync(CLI).mtimeMs >= Math.max(...SOURCES.map((s) => statSync(s).mtimeMs));
    if (!fresh()) {
      try {
        execFileSync('npx', ['tsc', '-p', 'tsconfig.json'], { cwd: ROOT, stdio: 'pipe' });
      } catch {
        // tsc emits even when another file does not type-check yet; freshness decides
      }
    }
    if (!fresh()) throw new Error(`could not build ${CLI}`);
    cluster = await startRedisCluster();
    env = { REDIS_CLUSTER_NODES: cluster.seeds, REDIS_PREFIX: prefix };
    source = await openRedisStore({ url: redis.url, prefix });
    opened.push(source);
  }, 240_000);
  afterAll(async () => {
    for (const s of opened) await s.close();
    await cluster?.stop();
    await deletePrefix(redis.url, prefix);
  });

  it('counts, copies (resuming), verifies; a Store on the cluster reads every service back, TTLs kept', async () => {
    // the services write on the one Redis
    const clock = new ManualClock(T0);
    const auth = (store: RedisStore) => new AuthService({ store, clock, logger: silent, tokenTtlMs: 3_600_000, partnerTokenTtlMs: 3_600_000, deviceTokenTtlMs: 3_600_000 });
    for (const user of ['ana', 'bo', 'chul']) await auth(source).createAccount({ user, roles: ['staff'], password: `${user}-password-1` });
    const tickets = new TicketService({ store: source, clock, bus: createBus(source, 'migrate-src') });
    const show = await tickets.createShow({ name: '겨울 콘서트', venue: '세종문화회관', date: '2026-12-24T19:30:00+09:00' });
    const booked = [];
    for (const seat of ['A-1', 'A-2', 'A-3']) booked.push(await tickets.book({ show_id: show.id, seat, amount_paid: 30_000 }));
    await deposit(source, T0, 'fund-escrow', 'escrow', 10n ** 12n);
    for (const u of ['ana', 'bo']) await deposit(source, T0, `fund-${u}`, userAccount(u, 'wallet'), 500n * 10n ** 6n);
    await passedChallenge(source, 'ana', 'c_mig1', 'starter_10k', 10_000, 1_000_000);
    await source.update(['test:order:1'], () => ({
      writes: [{ op: 'set', key: 'test:order:1', value: { n: 1 } }, ...outboxWrites({ id: 'order-1', dest: 'peer', payload: { n: 1 }, createdAt: T0 }, 'test:order:1')],
      result: undefined,
    }));
    await source.set('test:session:s1', { who: 'ana' }, { ttlMs: 600_000 });
    await source.update([], () => ({ writes: [{ op: 'push', key: 'test:feed:f1', value: { i: 1 }, cap: 100 }, { op: 'push', key: 'test:feed:f1', value: { i: 2 }, cap: 100 }], result: undefined }));
    const plain = new Redis(redis.url);
    const sourceKeys: string[] = [];
    try {
      await plain.pexpire(`${prefix}l:test:feed:f1`, 900_000);
      let cursor = '0';
      do {
        const [next, found] = await plain.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
        sourceKeys.push(...found);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      plain.disconnect();
    }
    const storeKeys = sourceKeys.filter((k) => /^[vlz]:/.test(k.slice(prefix.length)));
    expect(storeKeys.length).toBeGreaterThan(30);

    // count: what it would copy, by service; nothing written
    const dry = await run(env, 'migrate-cluster', '--from', redis.url, '--dry-run');
    expect(dry.code, dry.stderr).toBe(0);
    const counted = JSON.parse(dry.stdout) as { keys: { v: number; l: number; z: number }; services: Record<string, number>; written: number; present: number };
    expect(counted.keys.v + counted.keys.l + counted.keys.z).toBe(storeKeys.length);
    for (const service of ['auth', 'ticket', 'pay', 'outbox', 'test']) expect(counted.services[service]).toBeGreaterThan(0);
    expect(counted).toMatchObject({ written: 0, present: 0 });

    // an interrupted copy (one small batch), then the command resumes where it stopped
    const target = await openRedisStore({ target: { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, prefix });
    opened.push(target);
    const feed = new Redis(redis.url);
    try {
      const part = await migrate('copy', { source: feed, sourcePrefix: prefix, target, targetPrefix: prefix, sourceName: describeTarget({ url: redis.url }), batch: 5, maxBatches: 1 });
      expect(part.done).toBe(false);
      expect(part.written).toBeGreaterThan(0);
      expect(part.written).toBeLessThan(storeKeys.length);
    } finally {
      feed.disconnect();
    }
    const copied = await run(env, 'migrate-cluster', '--from', redis.url, '--batch', '5');
    expect(copied.code, copied.stderr).toBe(0);
    const report = JSON.parse(copied.stdout) as { resumed: boolean; done: boolean; written: number };
    expect(report).toMatchObject({ resumed: true, done: true });
    const verified = await run(env, 'migrate-cluster', '--from', redis.url, '--verify');
    expect(verified.code, verified.stdout).toBe(0);
    expect(JSON.parse(verified.stdout)).toMatchObject({ differ: 0, keys: counted.keys });

    // a Store on the cluster reads every service back (partition check on)
    const onCluster = await openRedisStore({ target: { cluster: cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })) }, prefix, partitionCheck: true });
    opened.push(onCluster);
    expect((await auth(onCluster).accounts()).map((a) => a.user).sort()).toEqual(expect.arrayContaining(['ana', 'bo', 'chul']));
    const login = await auth(onCluster).login('bo', 'bo-password-1', '127.0.0.1');
    expect(login).toMatchObject({ token: expect.any(String) });
    const clusterTickets = new TicketService({ store: onCluster, clock, bus: createBus(onCluster, 'migrate-dst') });
    expect(await clusterTickets.counts(show.id)).toMatchObject({ tickets: 3 });
    expect(await clusterTickets.book({ show_id: show.id, seat: 'A-1', amount_paid: 1 }).catch((e: { code: string }) => e.code)).toBe('seat_taken');
    expect(availableOf(await readAccount(onCluster, userAccount('bo', 'wallet')))).toBe(500n * 10n ** 6n);
    expect((await checkLedger(onCluster)).ok).toBe(true);
    expect(await onCluster.get('pay:chal:c_mig1')).toMatchObject({ id: 'c_mig1', state: 'passed' });
    expect(await onCluster.get('test:order:1')).toEqual({ n: 1 });
    expect(await onCluster.range('test:feed:f1')).toEqual([{ i: 1 }, { i: 2 }]);
    expect(await onCluster.get('test:session:s1')).toEqual({ who: 'ana' });
    const ttl = async (space: 'v' | 'l', key: string) => (target.commands as unknown as Redis).pttl(space === 'v' ? target.vk(key) : target.lk(key));
    expect(await ttl('v', 'test:session:s1')).toBeGreaterThan(590_000);
    expect(await ttl('v', 'test:session:s1')).toBeLessThanOrEqual(600_000);
    expect(await ttl('l', 'test:feed:f1')).toBeGreaterThan(890_000);
    expect(await ttl('v', 'test:order:1')).toBe(-1);

    // a write on the old server after the copy: verify finds it; copying again makes them agree
    await source.set('test:order:1', { n: 2 });
    const stale = await run(env, 'migrate-cluster', '--from', redis.url, '--verify');
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stdout)).toMatchObject({ differ: 1, examples: ['content differs: v:test:order:1'] });
    const again = await run(env, 'migrate-cluster', '--from', redis.url);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ resumed: false, done: true, written: storeKeys.length });
    expect((await run(env, 'migrate-cluster', '--from', redis.url, '--verify')).code).toBe(0);
    expect(await onCluster.get('test:order:1')).toEqual({ n: 2 });
  }, 180_000);

  it('refuses bad settings with exit 2, naming the setting', async () => {
    const cases: [Record<string, string>, string[], RegExp][] = [
      [{ REDIS_PREFIX: prefix }, ['--from', redis.url], /^REDIS_CLUSTER_NODES:/m],
      [env, [], /^--from:/m],
      [env, ['--from', 'http://127.0.0.1:6379'], /^--from: must be a redis/m],
      [env, ['--from', `redis://127.0.0.1:${cluster.nodes[0]!.port}`], /^--from: .* is a Redis Cluster node/m],
      [env, ['--from', 'redis://127.0.0.1:1'], /^--from: cannot reach/m],
      [env, ['--from', redis.url, '--dry-run', '--verify'], /^--dry-run and --verify/m],
      [env, ['--from', redis.url, '--batch', '0'], /^--batch:/m],
      [env, ['--from', redis.url, '--from-prefix', ''], /^--from-prefix:/m],
      [{ ...env, REDIS_PREFIX: 'a{b}:' }, ['--from', redis.url], /REDIS_PREFIX/],
      [{ ...env, REDIS_CLUSTER_NODES: '127.0.0.1:1' }, ['--from', redis.url], /^REDIS_CLUSTER_NODES:/m],
      [env, ['--from', redis.url, '--nope'], /--nope/],
    ];
    for (const [e, args, why] of cases) {
      const r = await run(e, 'migrate-cluster', ...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(why);
    }
    expect((await run(env, 'copy-everything')).code).toBe(2);
  }, 120_000);
});
