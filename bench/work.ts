/**
 * bench/work: the reward credit (GET /work) in two figures. Prints one JSON object.
 *
 *   npm run build && node dist/bench/work.js [--seconds 8] [--connections 64] [--members 20000]
 *                                            [--credits 6000] [--concurrency 32] [--only http|lmdb|redis]
 *
 * 1. HTTP: GET /work on the maru hub (uWS) and on Fastify serving the same handler (the same
 *    RewardService on a fresh LMDB store, the same zod schema, bench/http-server.ts), each server in
 *    its own process, wrk (Debian package, one thread) as the load generator in a third. Every
 *    request credits another member (1 unit), so all are real credits; non_2xx proves it.
 * 2. LMDB in-process: `--credits` credits through the RewardService, 64 in flight, with the CPU
 *    time the process spent per credit (all its threads: lmdb-js's writer and the disk flush too),
 *    a figure that a loaded machine disturbs less than throughput.
 * 3. Redis: `--credits` credits of distinct members on one Redis, first by one process, then split
 *    between two processes crediting at once (each a RewardService on its own connection, as two hub
 *    processes hold them, `--concurrency` in flight each). Reported: credits per second, the store's
 *    optimistic retries (a retry = a read key changed by the other process before the commit), and
 *    the check that the ledger is numbered 1..n without gaps or repeats and the totals are exact.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBus } from '../src/bus.js';
import { offsetClock } from '../src/clock.js';
import { RewardService } from '../src/reward/service.js';
import { openLmdbStore } from '../src/store/lmdb.js';
import type { Store } from '../src/store/port.js';
import { openRedisStore, type RedisStore } from '../src/store/redis.js';
import { runWrk, startServer, type Run } from './wrk.js';
import { dropRedisPrefix } from './redis-prefix.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '64' },
    members: { type: 'string', default: '20000' },
    credits: { type: 'string', default: '6000' },
    concurrency: { type: 'string', default: '32' },
    only: { type: 'string' },
  },
});
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const CLOCK_START = Date.parse('2026-11-21T10:00:00+09:00');

async function openService(prefix: string, lmdbPath?: string) {
  const store: Store = lmdbPath ? await openLmdbStore({ path: lmdbPath }) : await openRedisStore({ url: REDIS_URL, prefix });
  const bus = createBus(store, `bench-${process.pid}`);
  await bus.start();
  const service = new RewardService({ store, clock: offsetClock(CLOCK_START), bus });
  return { store, bus, service };
}

// ---- child: one "hub process" crediting its share of the members on Redis ----------------------

if (positionals[0] === 'child') {
  const [, prefix, idsFile, concurrencyArg] = positionals as [string, string, string, string];
  const ids = JSON.parse(readFileSync(idsFile, 'utf8')) as string[];
  const { store, bus, service } = await openService(prefix);
  process.stdout.write('GO?\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Number(concurrencyArg) }, async () => {
      for (let i = next++; i < ids.length; i = next++) await service.work({ id: ids[i]!, kc: 1, v: 150 });
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const { retries, updates } = (store as RedisStore).stats();
  process.stdout.write(`RESULT ${JSON.stringify({ credits: ids.length, seconds, retries, updates })}\n`);
  await bus.close();
  await store.close();
  process.exit(0);
}

// ---- 1. HTTP: hub against Fastify -------------------------------------------------------------


async function httpFigures() {
  if (spawnSync('wrk', ['--version']).error !== undefined) return { skipped: 'wrk is not installed (apt-get install wrk)' };
  const seconds = Number(values.seconds);
  const connections = Number(values.connections);
  const members = Number(values.members);
  const results: Record<string, Run> = {};
  for (const target of ['maru', 'fastify']) {
    const { child, port, ids } = await startServer(target, members);
    // warm-up on reads only, so every member keeps its 3 units for the measured run
    runWrk(port, ids.slice(0, 100).map((id) => `/member?id=${id}`), 2, connections);
    results[target] = runWrk(port, [0, 1, 2].flatMap((pass) => ids.map((id) => `/work?id=${id}&kc=1&v=${150 + pass}`)), seconds, connections);
    child.kill('SIGKILL');
  }
  return {
    tool: 'wrk -t1',
    seconds,
    connections,
    members,
    results,
    throughput_x: +(results.maru!.requests_per_s / results.fastify!.requests_per_s).toFixed(2),
  };
}

// ---- 2. LMDB in-process: throughput and CPU per credit ------------------------------------------

async function seed(service: RewardService, n: number): Promise<string[]> {
  const ids: string[] = [];
  let zone = '';
  for (let i = 0; i < n; i += 64) {
    if (i % 6400 === 0) zone = (await service.culture({ country: 'KR', lang: 'ko', name: `bench ${i / 6400}` })).id;
    const batch = await Promise.all(Array.from({ length: Math.min(64, n - i) }, (_, j) => service.createMember({ name: `b${i + j}`, zone })));
    ids.push(...batch.map((m) => m.id));
  }
  return ids;
}

async function lmdbFigures() {
  const credits = Number(values.credits);
  const { store, bus, service } = await openService('', join(mkdtempSync(join(tmpdir(), 'maru-bench-work-')), 'store'));
  const ids = await seed(service, credits);
  let next = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      for (let i = next++; i < ids.length; i = next++) await service.work({ id: ids[i]!, kc: 1, v: 150 });
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  await bus.close();
  await store.close();
  return { credits, in_flight: 64, credits_per_s: Math.round(credits / seconds), cpu_us_per_credit: Math.round((cpu.user + cpu.system) / credits) };
}

// ---- 3. Redis: one process, then two at once --------------------------------------------------

const deletePrefix = (prefix: string) => dropRedisPrefix(REDIS_URL, prefix);

interface ChildResult {
  credits: number;
  seconds: number;
  retries: number;
  updates: number;
}

async function redisCase(processes: number) {
  const credits = Number(values.credits);
  const concurrency = Number(values.concurrency);
  const prefix = `bench:work:${process.pid}:${processes}:`;
  try {
    const { store, bus, service } = await openService(prefix);
    const ids = await seed(service, credits);
    const dir = mkdtempSync(join(tmpdir(), 'maru-bench-work-'));
    const children = Array.from({ length: processes }, (_, p) => {
      const file = join(dir, `ids-${p}.json`);
      writeFileSync(file, JSON.stringify(ids.filter((_, i) => i % processes === p)));
      const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'child', prefix, file, String(concurrency)], { stdio: ['pipe', 'pipe', 'inherit'] });
      let buf = '';
      const ready = new Promise<void>((resolve) => child.stdout!.on('data', (d) => ((buf += d), buf.includes('GO?') && resolve())));
      const done = new Promise<ChildResult>((resolve, reject) => {
        child.once('exit', (code) => {
          const line = buf.split('\n').find((l) => l.startsWith('RESULT '));
          if (code !== 0 || !line) reject(new Error(`child exited with ${code}`));
          else resolve(JSON.parse(line.slice(7)) as ChildResult);
        });
      });
      return { child, ready, done };
    });
    await Promise.all(children.map((c) => c.ready));
    const t0 = performance.now();
    for (const c of children) c.child.stdin!.end('go\n');
    const results = await Promise.all(children.map((c) => c.done));
    const wall = (performance.now() - t0) / 1000;
    // every credit numbered once, 1..n, and the totals exact
    const sync = await service.syncPayload({ limit: 10000 });
    const ledger = await service.rewardLedger({ limit: 1 });
    const seqs = sync.entries.map((e) => e.ledger_seq).sort((a, b) => a - b);
    const numbered = seqs.length === credits && seqs.every((s, i) => s === i + 1);
    const retries = results.reduce((s, r) => s + r.retries, 0);
    await bus.close();
    await store.close();
    return {
      processes,
      concurrency_per_process: concurrency,
      credits,
      credits_per_s: Math.round(credits / wall),
      retries,
      retries_per_credit: +(retries / credits).toFixed(3),
      per_process: results.map((r) => ({ credits: r.credits, credits_per_s: Math.round(r.credits / r.seconds), retries: r.retries })),
      ledger_numbered_1_to_n: numbered,
      totals_exact: "credits" in ledger.totals && ledger.totals.credits === credits && ledger.totals.units === credits,
    };
  } finally {
    await deletePrefix(prefix).catch(() => undefined);
  }
}

const out: Record<string, unknown> = {
  bench: 'work',
  node: process.version,
  cpu: cpus()[0]?.model,
  cores: cpus().length,
  loadavg_at_start: loadavg().map((l) => +l.toFixed(2)),
};
if (values.only === undefined || values.only === 'http') out.http = await httpFigures();
if (values.only === undefined || values.only === 'lmdb') out.lmdb = await lmdbFigures();
if (values.only === undefined || values.only === 'redis') {
  try {
    out.redis = { one_process: await redisCase(1), two_processes: await redisCase(2) };
  } catch (err) {
    out.redis = { skipped: (err as Error).message };
  }
}
out.loadavg_at_end = loadavg().map((l) => +l.toFixed(2));
console.log(JSON.stringify(out, null, 2));
