// Ledger throughput: transfers per second, CPU per transfer and p99 latency, on LMDB (one process)
// and on Redis with 1, 2 and 3 hub processes (separate OS processes, each with its own Store and its
// own ledger writer: one of them holds the writer lease and applies every transfer in batches, the
// others hand theirs over), for two shapes: "hot" (every transfer touches the escrow account) and
// "many" (random pairs among 1,000 wallets). Each case runs for a fixed time with `--concurrency`
// transfers in flight per process; afterwards the ledger check runs on the store (balances
// recomputed from the log = stored, debits = credits, nothing negative) and every acknowledged
// transfer must be in the log exactly once.
//
// It starts its own redis-server (Debian's /usr/bin/redis-server) on a free loopback port with
// --appendonly yes (fsync everysec) in a temporary directory, and never touches another Redis.
//
// cpu_us_per_transfer: the CPU (user + system) of the hub processes during the run, per transfer;
// the Redis server's own CPU is not in it (printed apart without --json).
//
// Run: npm run build && node dist/bench/ledger.js [--json] [--seconds 5] [--concurrency 64]
//        [--only lmdb|redis] [--direct]
// BENCH_CPU_PROF_DIR=<dir> writes a CPU profile of each hub process there.
// --direct applies each transfer in its own store.update, without batches or a writer (the way the
// ledger worked before batching), for comparison.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { checkLedger } from '../src/payment/check.js';
import { K, ledgerUpdate, type TransferInput } from '../src/payment/ledger.js';
import { applyOps } from '../src/payment/ledger-batch.js';
import { registerLedgerCommands, transfersArgs, transfersOp } from '../src/payment/ledger-commands.js';
import { LedgerWriter } from '../src/payment/ledger-writer.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import { openRedisStore } from '../src/store/redis.js';
import type { Store } from '../src/store/port.js';
import { cpuMs } from './proc.js';
import { redisServer, stopAll } from './redis-servers.js';

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const opt = (name: string, d: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : d;
};

const WALLETS = 1000;
const wallet = (i: number) => `u:w${i}:wallet`;

interface Spec {
  store: 'lmdb' | 'redis';
  path?: string;
  port?: number;
  prefix?: string;
  shape: 'hot' | 'many';
  seconds: number;
  concurrency: number;
  direct: boolean;
  index: number;
}

async function open(spec: Spec): Promise<Store> {
  if (spec.store === 'lmdb') return openLmdbStore({ path: spec.path! });
  return openRedisStore({ url: `redis://127.0.0.1:${spec.port}`, prefix: spec.prefix! });
}

/** One hub process of a case: waits for "go" on stdin, runs, prints its figures, waits for "exit". */
async function worker(spec: Spec): Promise<void> {
  const store = await open(spec);
  const writer = new LedgerWriter(store);
  registerLedgerCommands(writer);
  if (!spec.direct) await writer.start();
  const lines = createInterface({ input: process.stdin });
  const next = () => new Promise<string>((r) => lines.once('line', r));
  process.stdout.write('ready\n');
  await next();
  let n = 0;
  let acked = 0;
  let refused = 0;
  const lat: number[] = [];
  const rnd = (k: number) => Math.floor(Math.random() * k);
  const end = performance.now() + spec.seconds * 1000;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (performance.now() < end) {
        const id = `b${spec.index}-${n++}`;
        let t: TransferInput;
        if (spec.shape === 'hot') t = { id, debit: 'escrow', credit: wallet(rnd(WALLETS)), amount: BigInt(1 + rnd(97)), code: 'bench' };
        else {
          const a = rnd(WALLETS);
          t = { id, debit: wallet(a), credit: wallet((a + 1 + rnd(WALLETS - 1)) % WALLETS), amount: BigInt(1 + rnd(97)), code: 'bench' };
        }
        const s = performance.now();
        try {
          if (spec.direct) {
            const op = transfersOp(transfersArgs([t]));
            const [o] = await store.update(op.keys, (cur) => applyOps(op.keys, cur, [op]));
            if (!o!.ok) throw o!.error;
          } else {
            await writer.exec('transfers', transfersArgs([t]));
          }
          acked++;
          lat.push(performance.now() - s);
        } catch {
          refused++;
        }
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const retries = store.kind === 'redis' ? (store as unknown as { stats(): { retries: number } }).stats().retries : 0;
  process.stdout.write(`${JSON.stringify({ acked, refused, secs, cpu_us: cpu.user + cpu.system, retries, batches: writer.batcher.stats.batches, lat: lat.map((x) => Math.round(x * 100)) })}\n`);
  await next();
  await writer.stop();
  await store.close();
  process.exit(0);
}

async function seed(store: Store, shape: 'hot' | 'many'): Promise<number> {
  const moves: TransferInput[] =
    shape === 'hot'
      ? [{ id: 'seed:escrow', debit: 'bank', credit: 'escrow', amount: 10n ** 24n, code: 'seed' }]
      : Array.from({ length: WALLETS }, (_, i) => ({ id: `seed:${i}`, debit: 'bank', credit: wallet(i), amount: 10n ** 18n, code: 'seed' }));
  await Promise.all(moves.map((t) => ledgerUpdate(store, Date.now, [K.transfer(t.id), K.account(t.debit), K.account(t.credit)], (tx) => (tx.transfer(t), { result: null }))));
  return moves.length;
}

interface Figures {
  retries: number;
  batches: number;
  acked: number;
  refused: number;
  secs: number;
  cpu_us: number;
  lat: number[];
}

async function runCase(base: Omit<Spec, 'index'>, processes: number, redisPid?: number) {
  const self = fileURLToPath(import.meta.url);
  const seedStore = await open({ ...base, index: 0 });
  const seeded = await seed(seedStore, base.shape);
  await seedStore.close();
  const kids = Array.from({ length: processes }, (_, index) => {
    const prof = process.env.BENCH_CPU_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF_DIR] : [];
    const child = spawn(process.execPath, [...prof, self, '--worker', JSON.stringify({ ...base, index })], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const queue: string[] = [];
    const waiters: ((l: string) => void)[] = [];
    lines.on('line', (l) => (waiters.length ? waiters.shift()!(l) : queue.push(l)));
    const line = () => new Promise<string>((r) => (queue.length ? r(queue.shift()!) : waiters.push(r)));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    return { child, line, exited };
  });
  for (const k of kids) if ((await k.line()) !== 'ready') throw new Error('a worker did not start');
  // let the lease settle: one process writes, the others know it
  await new Promise((r) => setTimeout(r, 300));
  const redisCpu0 = redisPid ? cpuMs(redisPid) : 0;
  for (const k of kids) k.child.stdin!.write('go\n');
  const figs = (await Promise.all(kids.map((k) => k.line()))).map((l) => JSON.parse(l) as Figures);
  const redisCpuMs = redisPid ? cpuMs(redisPid) - redisCpu0 : 0;
  for (const k of kids) k.child.stdin!.write('exit\n');
  await Promise.all(kids.map((k) => k.exited));
  const acked = figs.reduce((s, f) => s + f.acked, 0);
  const secs = Math.max(...figs.map((f) => f.secs));
  const lat = figs.flatMap((f) => f.lat).sort((a, b) => a - b);
  const store = await open({ ...base, index: 0 });
  const report = await checkLedger(store, 5000);
  const logged = await store.indexCount(K.log);
  await store.close();
  const problems: string[] = [];
  if (!report.ok) problems.push(`mismatches ${report.mismatches.length}, negative ${report.negative.length}, debits ${report.debits} credits ${report.credits}`);
  if (logged !== seeded + acked) problems.push(`log holds ${logged} transfers, ${seeded + acked} acknowledged`);
  const row = {
    store: base.store,
    processes,
    shape: base.shape,
    transfers_per_s: Math.round(acked / secs),
    cpu_us_per_transfer: +(figs.reduce((s, f) => s + f.cpu_us, 0) / Math.max(acked, 1)).toFixed(1),
    p99_ms: lat.length ? +(lat[Math.min(lat.length - 1, Math.floor(lat.length * 0.99))]! / 100).toFixed(2) : 0,
    check: problems.length ? problems.join('; ') : 'ok',
  };
  const extra = { transfers: acked, refused: figs.reduce((s, f) => s + f.refused, 0), retries: figs.reduce((s, f) => s + f.retries, 0), batches: figs.reduce((s, f) => s + f.batches, 0), redis_cpu_us_per_transfer: redisPid ? +((redisCpuMs * 1000) / Math.max(acked, 1)).toFixed(1) : undefined };
  return { row, extra };
}

async function main(): Promise<void> {
  const json = flag('json');
  const seconds = Number(opt('seconds', '5'));
  const concurrency = Number(opt('concurrency', '64'));
  const only = opt('only', '');
  const direct = flag('direct');
  const shapes = ['hot', 'many'] as const;
  const out = (row: object, extra: object) => console.log(json ? JSON.stringify(row) : JSON.stringify({ ...row, ...extra, direct }));
  try {
    if (only !== 'redis') {
      for (const shape of shapes) {
        const dir = mkdtempSync(join(tmpdir(), 'maru-bench-ledger-'));
        try {
          const r = await runCase({ store: 'lmdb', path: dir, shape, seconds, concurrency, direct }, 1);
          out(r.row, r.extra);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      }
    }
    if (only !== 'lmdb') {
      const server = await redisServer();
      for (const processes of [1, 2, 3]) {
        for (const shape of shapes) {
          const prefix = `bench:ledger:${processes}:${shape}:`;
          const r = await runCase({ store: 'redis', port: server.port, prefix, shape, seconds, concurrency, direct }, processes, server.child.pid);
          out(r.row, r.extra);
        }
      }
    }
  } finally {
    await stopAll();
  }
}

if (argv[0] === '--worker') await worker(JSON.parse(argv[1]!) as Spec);
else await main();
