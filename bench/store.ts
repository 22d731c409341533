/**
 * Store benchmark: atomic two-key transfers through update() on LMDB and on Redis.
 *
 * Cases per adapter:
 *   spread: random pairs out of ACCOUNTS accounts, CONCURRENCY transfers in flight
 *   hot:    every transfer between the same two accounts, CONCURRENCY in flight
 *   hot_two_instances (Redis): the hot case split over two Store instances, like two hub processes
 * Each case runs for BENCH_MS milliseconds (default 3000), then checks that the balances still sum
 * to the starting total and that none went negative. Prints one JSON object.
 *
 * Usage: node dist/bench/store.js   (env: BENCH_MS, BENCH_CONCURRENCY, REDIS_URL)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { openLmdbStore } from '../src/store/lmdb.js';
import type { Json, Store } from '../src/store/port.js';
import { openRedisStore, type RedisStore } from '../src/store/redis.js';
import { dropRedisPrefix } from './redis-prefix.js';

const DURATION_MS = Number(process.env.BENCH_MS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ACCOUNTS = 1000;
const INITIAL = 1_000_000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

interface CaseResult {
  accounts: number;
  concurrency: number;
  duration_ms: number;
  ops: number;
  ops_per_s: number;
  refused: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  retries?: number;
  retries_per_op?: number;
  invariant_ok: boolean;
}

const round = (n: number, digits = 3) => Number(n.toFixed(digits));

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i]!;
}

function transfer(store: Store, from: string, to: string, amount: number): Promise<boolean> {
  return store.update([from, to], ([a, b]: (Json | undefined)[]) => {
    const fromBal = a as number;
    const toBal = b as number;
    if (fromBal < amount) return { writes: [], result: false };
    return {
      writes: [
        { op: 'set', key: from, value: fromBal - amount },
        { op: 'set', key: to, value: toBal + amount },
      ],
      result: true,
    };
  });
}

async function seed(store: Store, accounts: string[]): Promise<void> {
  for (let i = 0; i < accounts.length; i += 100) {
    await Promise.all(accounts.slice(i, i + 100).map((k) => store.set(k, INITIAL)));
  }
}

/** Runs one case; with several stores (instances of one shared backend) the workers alternate. */
async function runCase(stores: Store[], accounts: string[]): Promise<CaseResult> {
  const store = stores[0]!;
  await seed(store, accounts);
  const statFns = stores.map((s) => (s as Partial<RedisStore>).stats?.bind(s));
  const stats = statFns.every((f) => f !== undefined)
    ? () => ({ retries: statFns.reduce((sum, f) => sum + f!().retries, 0) })
    : undefined;
  const pick = () => {
    const i = Math.floor(Math.random() * accounts.length);
    let j = Math.floor(Math.random() * (accounts.length - 1));
    if (j >= i) j++;
    return [accounts[i]!, accounts[j]!] as const;
  };

  // warm-up, not measured
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      for (let n = 0; n < 10; n++) {
        const [a, b] = pick();
        await transfer(stores[w % stores.length]!, a, b, 1);
      }
    }),
  );

  const before = stats?.();
  const latencies: number[] = [];
  let refused = 0;
  const started = performance.now();
  const deadline = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, w) => {
      const mine = stores[w % stores.length]!;
      while (performance.now() < deadline) {
        const [a, b] = pick();
        const amount = 1 + Math.floor(Math.random() * 100);
        const t0 = performance.now();
        const ok = await transfer(mine, a, b, amount);
        latencies.push(performance.now() - t0);
        if (!ok) refused++;
      }
    }),
  );
  const elapsed = performance.now() - started;
  const after = stats?.();

  const balances = (await store.getMany<number>(accounts)) as (number | undefined)[];
  const sum = balances.reduce<number>((s, v) => s + (v ?? Number.NaN), 0);
  const invariantOk = sum === INITIAL * accounts.length && balances.every((v) => typeof v === 'number' && v >= 0);

  const sorted = Float64Array.from(latencies).sort();
  const result: CaseResult = {
    accounts: accounts.length,
    concurrency: CONCURRENCY,
    duration_ms: Math.round(elapsed),
    ops: latencies.length,
    ops_per_s: Math.round((latencies.length / elapsed) * 1000),
    refused,
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
    max_ms: round(sorted[sorted.length - 1] ?? 0),
    invariant_ok: invariantOk,
  };
  if (before && after) {
    result.retries = after.retries - before.retries;
    result.retries_per_op = round(result.retries / Math.max(1, result.ops));
  }
  return result;
}

const accountNames = (n: number, tag: string) => Array.from({ length: n }, (_, i) => `bench:${tag}:${i}`);

type CaseOutcome = CaseResult | { error: string };

async function outcome(run: () => Promise<CaseResult>): Promise<CaseOutcome> {
  try {
    return await run();
  } catch (err) {
    return { error: (err as Error).message };
  }
}

async function benchLmdb(path: string): Promise<Record<string, CaseOutcome>> {
  const store = await openLmdbStore({ path });
  try {
    return {
      spread: await outcome(() => runCase([store], accountNames(ACCOUNTS, 'spread'))),
      hot: await outcome(() => runCase([store], accountNames(2, 'hot'))),
    };
  } finally {
    await store.close();
  }
}

/** Redis cases; `hot_two_instances` splits the workers over two instances, as two hub processes. */
async function benchRedis(url: string, prefix: string): Promise<Record<string, CaseOutcome>> {
  const a = await openRedisStore({ url, prefix });
  const b = await openRedisStore({ url, prefix });
  try {
    return {
      spread: await outcome(() => runCase([a], accountNames(ACCOUNTS, 'spread'))),
      hot: await outcome(() => runCase([a], accountNames(2, 'hot'))),
      hot_two_instances: await outcome(() => runCase([a, b], accountNames(2, 'hot2'))),
    };
  } finally {
    await a.close();
    await b.close();
  }
}

const deletePrefix = dropRedisPrefix;

async function redisVersion(url: string): Promise<string | undefined> {
  const client = new Redis(url, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
  client.on('error', () => undefined);
  try {
    const info = await client.info('server');
    return /redis_version:(\S+)/.exec(info)?.[1];
  } finally {
    client.disconnect();
  }
}

async function main(): Promise<void> {
  const out: Record<string, unknown> = {
    bench: 'store.update two-key transfer',
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cpus: os.cpus().length,
    duration_ms_per_case: DURATION_MS,
  };

  const dir = mkdtempSync(join(os.tmpdir(), 'maru-bench-'));
  try {
    out.lmdb = await benchLmdb(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const prefix = `bench:${process.pid}:${Date.now()}:`;
  try {
    const version = await redisVersion(REDIS_URL);
    out.redis = { server_version: version, ...(await benchRedis(REDIS_URL, prefix)) };
  } catch (err) {
    out.redis = { skipped: (err as Error).message };
  } finally {
    await deletePrefix(REDIS_URL, prefix).catch(() => undefined);
  }

  const cases = [out.lmdb, out.redis].flatMap((r) =>
    r && typeof r === 'object' ? Object.values(r).filter((c) => typeof c === 'object' && c !== null) : [],
  ) as CaseOutcome[];
  out.invariant_ok = cases.length > 0 && cases.every((c) => 'invariant_ok' in c && c.invariant_ok);
  console.log(JSON.stringify(out, null, 2));
  if (!out.invariant_ok) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
