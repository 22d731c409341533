// Ledger throughput: transfers per second and p99 latency on LMDB and on Redis, with one hot account
// (every transfer debits the same account) and with many accounts, then the invariants checked
// (recomputed balances = stored, debits = credits, no negative non-boundary account).
// Each shape runs with single transfers and with linked pairs (two transfers in one update, as a
// payout's trader and platform halves); cpu_us_per_transfer is this process's CPU (user + system)
// per transfer (for Redis, the server's own CPU is not included).
// Run: npm run build && node dist/bench/ledger.js [updates per case, default 2000] [concurrency, default 16]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ledgerUpdate, transferKeys } from '../src/payment/ledger.js';
import { checkLedger } from '../src/payment/check.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import { openRedisStore } from '../src/store/redis.js';
import type { Store } from '../src/store/port.js';
import { dropRedisPrefix } from './redis-prefix.js';

const N = Number(process.argv[2] ?? 2000);
const C = Number(process.argv[3] ?? 16);

async function runCase(store: Store, shape: 'hot' | 'many', linked: boolean) {
  const accounts = shape === 'hot' ? 1 : 200;
  for (let a = 0; a < accounts; a++) {
    const t = { id: `seed-${a}`, debit: 'bank', credit: `u:${a}:wallet`, amount: 10n ** 18n, code: 'seed' };
    await ledgerUpdate(store, Date.now, transferKeys([t]), (tx) => (tx.transfer(t), { result: undefined }));
  }
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: C }, async () => {
      for (;;) {
        const i = next++;
        if (i >= N) return;
        const debit = `u:${i % accounts}:wallet`;
        const ts = [{ id: `x-${i}`, debit, credit: i % 2 ? 'escrow' : 'operating', amount: BigInt(1 + (i % 97)), code: 'bench' }];
        if (linked) ts.push({ id: `x-${i}:b`, debit, credit: 'operating', amount: 1n, code: 'bench' });
        const s = performance.now();
        await ledgerUpdate(store, Date.now, transferKeys(ts), (tx) => {
          for (const t of ts) tx.transfer(t);
          return { result: undefined };
        });
        lat.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const transfers = N * (linked ? 2 : 1);
  lat.sort((a, b) => a - b);
  const check = await checkLedger(store);
  return { shape, linked, updates: N, transfers, concurrency: C, transfers_per_second: Math.round(transfers / secs), cpu_us_per_transfer: +((cpu.user + cpu.system) / transfers).toFixed(1), p50_ms: +lat[Math.floor(N * 0.5)]!.toFixed(2), p99_ms: +lat[Math.floor(N * 0.99)]!.toFixed(2), invariants_ok: check.ok, debits_equal_credits: check.debits === check.credits };
}

const results: unknown[] = [];
const CASES = [['hot', false], ['hot', true], ['many', false], ['many', true]] as const;
for (const [shape, linked] of CASES) {
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-ledger-'));
  const lmdb = await openLmdbStore({ path: dir });
  results.push({ store: 'lmdb', ...(await runCase(lmdb, shape, linked)) });
  await lmdb.close();
  rmSync(dir, { recursive: true, force: true });
}
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
// every key of the run lives under REDIS_PREFIX (when given) and the run's own name below it, and
// only those keys are deleted afterwards: nothing else on the Redis it is pointed at is touched
const base = process.env.REDIS_PREFIX ?? '';
for (const [shape, linked] of CASES) {
  const prefix = `${base}bench:ledger:${process.pid}:${shape}:${linked ? 'pair' : 'single'}:`;
  try {
    const redis = await openRedisStore({ url, prefix });
    results.push({ store: 'redis', ...(await runCase(redis, shape, linked)) });
    await dropRedisPrefix(url, prefix);
    await redis.close();
  } catch (err) {
    results.push({ store: 'redis', shape, linked, skipped: (err as Error).message });
  }
}
console.log(JSON.stringify({ bench: 'ledger', node: process.version, results }, null, 2));
