// Ledger throughput: transfers per second and p99 latency on LMDB and on Redis, with one hot account
// (every transfer debits the same account) and with many accounts, then the invariants checked
// (recomputed balances = stored, debits = credits, no negative non-boundary account).
// Run: npm run build && node dist/bench/ledger.js [transfers per case, default 2000] [concurrency, default 16]
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

async function runCase(store: Store, shape: 'hot' | 'many') {
  const accounts = shape === 'hot' ? 1 : 200;
  for (let a = 0; a < accounts; a++) {
    const t = { id: `seed-${a}`, debit: 'bank', credit: `u:${a}:wallet`, amount: 10n ** 18n, code: 'seed' };
    await ledgerUpdate(store, Date.now, transferKeys([t]), (tx) => (tx.transfer(t), { result: undefined }));
  }
  const lat: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: C }, async () => {
      for (;;) {
        const i = next++;
        if (i >= N) return;
        const t = { id: `x-${i}`, debit: `u:${i % accounts}:wallet`, credit: i % 2 ? 'escrow' : 'operating', amount: BigInt(1 + (i % 97)), code: 'bench' };
        const s = performance.now();
        await ledgerUpdate(store, Date.now, transferKeys([t]), (tx) => (tx.transfer(t), { result: undefined }));
        lat.push(performance.now() - s);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  lat.sort((a, b) => a - b);
  const check = await checkLedger(store);
  return { shape, transfers: N, concurrency: C, per_second: Math.round(N / secs), p50_ms: +lat[Math.floor(N * 0.5)]!.toFixed(2), p99_ms: +lat[Math.floor(N * 0.99)]!.toFixed(2), invariants_ok: check.ok, debits_equal_credits: check.debits === check.credits };
}

const results: unknown[] = [];
for (const shape of ['hot', 'many'] as const) {
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-ledger-'));
  const lmdb = await openLmdbStore({ path: dir });
  results.push({ store: 'lmdb', ...(await runCase(lmdb, shape)) });
  await lmdb.close();
  rmSync(dir, { recursive: true, force: true });
}
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
for (const shape of ['hot', 'many'] as const) {
  const prefix = `bench:ledger:${process.pid}:${shape}:`;
  try {
    const redis = await openRedisStore({ url, prefix });
    results.push({ store: 'redis', ...(await runCase(redis, shape)) });
    await dropRedisPrefix(url, prefix);
    await redis.close();
  } catch (err) {
    results.push({ store: 'redis', shape, skipped: (err as Error).message });
  }
}
console.log(JSON.stringify({ bench: 'ledger', node: process.version, results }, null, 2));
