/**
 * The cost of REDIS_MIN_REPLICAS=1 (WAIT 1 after every atomic update): reward-style credits (one
 * update of a balance and an idempotency key) per second and their p99, with and without WAIT, in
 * the same run against the same primary (AOF everysec) and its one replica, both started here on
 * free loopback ports (redis-server from Debian). Rounds alternate so drifting machine load hits
 * both sides. Prints one JSON object.
 *
 * Usage: node dist/bench/redis-wait.js   (env: BENCH_MS per round, default 3000; BENCH_ROUNDS, default 3; BENCH_CONCURRENCY, default 32)
 */
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { openRedisStore, type RedisStore } from '../src/store/redis.js';
import { redisServer, stopAll } from './redis-servers.js';

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);


async function round(store: RedisStore, tag: string): Promise<{ credits: number; per_s: number; p50_ms: number; p99_ms: number }> {
  const lat: number[] = [];
  const end = performance.now() + DURATION_MS;
  let n = 0;
  const worker = async (w: number) => {
    while (performance.now() < end) {
      const id = `${tag}:${w}:${n++}`;
      const account = `bal:${w % 100}`;
      const t0 = performance.now();
      await store.update([`idem:${id}`, account], ([seen, bal]) =>
        seen !== undefined
          ? { writes: [], result: null }
          : {
              writes: [
                { op: 'set', key: `idem:${id}`, value: true, ttlMs: 600_000 },
                { op: 'set', key: account, value: ((bal as number | undefined) ?? 0) + 1 },
              ],
              result: null,
            },
      );
      lat.push(performance.now() - t0);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
  const s = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  const q = (p: number) => Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))]! * 100) / 100;
  return { credits: lat.length, per_s: Math.round(lat.length / s), p50_ms: q(0.5), p99_ms: q(0.99) };
}

const primary = await redisServer([]);
const replica = await redisServer(['--replicaof', '127.0.0.1', String(primary.port)]);
const probe = new Redis({ port: primary.port, host: '127.0.0.1' });
while (!/slave0:.*state=online/.test(await probe.info('replication'))) await new Promise((r) => setTimeout(r, 50));
probe.disconnect();
const url = `redis://127.0.0.1:${primary.port}`;
const plain = await openRedisStore({ url, prefix: 'bench:plain:' });
const waited = await openRedisStore({ url, prefix: 'bench:wait:', minReplicas: 1, waitTimeoutMs: 1000 });
const rows: { round: number; without_wait: Awaited<ReturnType<typeof round>>; wait_1: Awaited<ReturnType<typeof round>> }[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const a = r % 2 === 0 ? await round(plain, `p${r}`) : undefined;
  const b = await round(waited, `w${r}`);
  const c = a ?? (await round(plain, `p${r}`));
  rows.push({ round: r + 1, without_wait: c, wait_1: b });
}
await plain.close();
await waited.close();
await stopAll();
const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(
  JSON.stringify({
    bench: 'redis-wait',
    concurrency: CONCURRENCY,
    round_ms: DURATION_MS,
    rounds: rows,
    median: {
      without_wait: { per_s: med(rows.map((r) => r.without_wait.per_s)), p99_ms: med(rows.map((r) => r.without_wait.p99_ms)) },
      wait_1: { per_s: med(rows.map((r) => r.wait_1.per_s)), p99_ms: med(rows.map((r) => r.wait_1.p99_ms)) },
    },
  }),
);
