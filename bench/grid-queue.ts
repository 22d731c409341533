/**
 * bench/grid-queue: what spreading a trading job's chunks over processes through the BullMQ queue
 * costs. The same optimization (POST /api/program/optimize, a 240-combination ema_cross grid) on
 *
 *   local:       one process, TRADING_WORKERS=2, no Redis (the local Piscina pool, 8 chunks);
 *   queue-1x2:   one process, TRADING_WORKERS=2, with Redis (the queue on, its chunks on the local pool first);
 *   (the queue set-ups with TRADING_CHUNKS=32, so the per-chunk cost shows; the default cuts small grids into fewer)
 *   queue-2x1:   two processes, TRADING_WORKERS=1 each, sharing the Redis (the same two cores).
 *
 * The same cores in every case, so the difference is the queue's overhead. A second, tiny grid
 * (little work per chunk) gives the overhead per chunk: (queue-2x1 - local) / chunks. With both,
 * the time on N machines is about work / (N x threads) + chunks x overhead. A Monte Carlo job
 * (POST /api/program/montecarlo, 500 runs on the trades of an EMA 2/5 cross on --mc-count candles)
 * runs in each set-up too: its backtest on the job's process, then its chunks of runs, each carrying
 * the trades' P&L; `mc_cpu_ms` is the CPU time of the set-up's hub processes (Linux /proc) per job.
 * `--main` starts another build's hub (an A/B against it). Prints one JSON object.
 *
 *   npm run build && nice node dist/bench/grid-queue.js [--runs 3] [--count 100000] [--mc-count 1000000] [--redis redis://127.0.0.1:6379] [--main dist/src/main.js]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { MIN_CHUNK_WORK } from '../src/workers/queue.js';
import { cpuMs } from './proc.js';
import { dropRedisPrefix } from './redis-prefix.js';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : def;
};
const RUNS = Number(arg('runs', '3'));
const COUNT = Number(arg('count', '100000'));
const MC_COUNT = Number(arg('mc-count', '1000000'));
const REDIS = arg('redis', 'redis://127.0.0.1:6379');
const MAIN = resolve(arg('main', resolve(import.meta.dirname, '../src/main.js')));
const range = (a: number, n: number) => Array.from({ length: n }, (_, i) => a + i);
const heavy = { symbol: 'NQ', timeframe: '1m', count: COUNT, seed: 11, strategy: 'ema_cross', objective: 'net_profit', grid: { fast: range(2, 12), slow: range(30, 20) } };
const tiny = { ...heavy, count: 400, grid: { fast: range(2, 8), slow: range(30, 8) } };
const mc = { symbol: 'NQ', timeframe: '1m', count: MC_COUNT, seed: 11, strategy: 'ema_cross', params: { fast: 2, slow: 5 }, runs: 500, mc_seed: 4 };
const r1 = (x: number) => Math.round(x * 10) / 10;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Hub {
  url: string;
  child: ChildProcess;
}

function startHub(env: Record<string, string>): Promise<Hub> {
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [MAIN], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', DATA_DIR: mkdtempSync(join(tmpdir(), 'maru-bench-gq-')), ADMIN_PASSWORD: 'bench-admin-password', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n').find((l) => l.includes('maru listening'));
      if (line) ok({ url: (JSON.parse(line) as { url: string }).url, child });
    });
    child.once('exit', (code) => fail(new Error(`hub exited (${code}): ${out}`)));
  });
}

const stop = (h: Hub) => new Promise<void>((r) => (h.child.exitCode !== null ? r() : (h.child.once('exit', () => r()), h.child.kill('SIGTERM'))));

async function optimize(url: string, body: unknown, path = '/api/program/optimize'): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${res.status} ${text}`);
  return { ms: performance.now() - t0, text };
}

async function chunksOf(url: string): Promise<number | undefined> {
  const res = await fetch(`${url}/api/program/jobs`);
  return ((await res.json()) as { queue?: { chunks: number } }).queue?.chunks;
}

/** The three set-ups run side by side, their runs interleaved, so a busy machine weighs on each alike. */
async function scenarios(runs: number) {
  const prefix = `bench:gq:${randomBytes(4).toString('hex')}:`;
  const setups: { name: string; envs: Record<string, string>[] }[] = [
    { name: 'local', envs: [{ TRADING_WORKERS: '2' }] },
    { name: 'queue-1x2', envs: [{ TRADING_WORKERS: '2', REDIS_URL: REDIS, REDIS_PREFIX: `${prefix}a:`, TRADING_CHUNKS: '32' }] },
    { name: 'queue-2x1', envs: [1, 2].map(() => ({ TRADING_WORKERS: '1', REDIS_URL: REDIS, REDIS_PREFIX: `${prefix}b:`, TRADING_CHUNKS: '32' })) },
  ];
  const hubs = await Promise.all(setups.map((s) => Promise.all(s.envs.map((e) => startHub(e)))));
  try {
    const url = (k: number) => hubs[k]![0]!.url;
    for (let k = 0; k < setups.length; k++) {
      await optimize(url(k), heavy); // warm-up: every worker builds its candles
      await optimize(url(k), tiny);
    }
    const heavyMs: number[][] = setups.map(() => []);
    const tinyMs: number[][] = setups.map(() => []);
    const mcMs: number[][] = setups.map(() => []);
    const mcCpu: number[][] = setups.map(() => []);
    const mcChunks: (number | undefined)[] = [];
    const texts: string[] = [];
    const mcTexts: string[] = [];
    for (let i = 0; i < runs; i++) {
      for (let k = 0; k < setups.length; k++) {
        const h = await optimize(url(k), heavy);
        heavyMs[k]!.push(h.ms);
        texts[k] = h.text;
      }
    }
    for (let k = 0; k < setups.length; k++) await optimize(url(k), mc, '/api/program/montecarlo'); // warm-up: the Monte Carlo candles
    for (let i = 0; i < runs; i++) {
      for (let k = 0; k < setups.length; k++) {
        const cpu = () => hubs[k]!.reduce((a, h) => a + cpuMs(h.child.pid!), 0);
        const c0 = cpu();
        const m = await optimize(url(k), mc, '/api/program/montecarlo');
        mcCpu[k]!.push(cpu() - c0);
        mcMs[k]!.push(m.ms);
        mcTexts[k] = m.text;
        mcChunks[k] = await chunksOf(url(k));
      }
    }
    for (let i = 0; i < runs * 10; i++) for (let k = 0; k < setups.length; k++) tinyMs[k]!.push((await optimize(url(k), tiny)).ms);
    const out = [];
    for (let k = 0; k < setups.length; k++) {
      out.push({
        name: setups[k]!.name,
        processes: setups[k]!.envs.length,
        chunks: (await chunksOf(url(k))) ?? 8,
        heavy_ms: r1(median(heavyMs[k]!)),
        heavy_runs_ms: heavyMs[k]!.map(r1),
        tiny_ms: r1(median(tinyMs[k]!)),
        mc_chunks: mcChunks[k] ?? null,
        mc_ms: r1(median(mcMs[k]!)),
        mc_runs_ms: mcMs[k]!.map(r1),
        mc_cpu_ms: r1(median(mcCpu[k]!)),
        mc_cpu_runs_ms: mcCpu[k]!,
        text: texts[k]!,
        mc_text: mcTexts[k]!,
      });
    }
    return { out, prefix };
  } finally {
    await Promise.all(hubs.flat().map(stop));
  }
}

const { out: results, prefix } = await scenarios(RUNS);
await dropRedisPrefix(REDIS, prefix);

const [local, q12, q21] = results as [(typeof results)[0], (typeof results)[0], (typeof results)[0]];
console.log(
  JSON.stringify(
    {
      bench: 'grid-queue',
      machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version },
      grid: { combinations: 240, candles: COUNT, tiny_combinations: 64, tiny_candles: 400 },
      monte_carlo: { runs: 500, candles: MC_COUNT, trades: (JSON.parse(local.mc_text) as { trades: number }).trades },
      // what TRADING_CHUNKS=0 (auto) would choose on two threads: one chunk per MIN_CHUNK_WORK bar evaluations
      default_chunks: { heavy: Math.min(32, Math.max(2, Math.ceil((240 * COUNT) / MIN_CHUNK_WORK))), tiny: Math.min(32, Math.max(2, Math.ceil((64 * 400) / MIN_CHUNK_WORK))) },
      identical_answers: results.every((r) => r.text === local.text && r.mc_text === local.mc_text),
      scenarios: results.map(({ text: _t, mc_text: _m, ...r }) => r),
      overhead: {
        heavy_queue_2x1_vs_local_pct: r1(((q21.heavy_ms - local.heavy_ms) / local.heavy_ms) * 100),
        heavy_queue_1x2_vs_local_pct: r1(((q12.heavy_ms - local.heavy_ms) / local.heavy_ms) * 100),
        per_chunk_ms_2x1: r1((q21.tiny_ms - local.tiny_ms) / q21.chunks),
        per_chunk_ms_1x2: r1((q12.tiny_ms - local.tiny_ms) / q12.chunks),
        mc_queue_2x1_vs_local_pct: r1(((q21.mc_ms - local.mc_ms) / local.mc_ms) * 100),
        mc_queue_1x2_vs_local_pct: r1(((q12.mc_ms - local.mc_ms) / local.mc_ms) * 100),
      },
    },
    null,
    2,
  ),
);
