/**
 * bench/stream: SUBSCRIBERS SSE subscribers and PROGRAMS running programs on one hub (LMDB store,
 * one-second candles: PROGRAM_CANDLE_MS 60,000 / PROGRAM_SPEED 60). Measures what the market pump
 * (every candle: each program's strategy + engine step; every 3 s: the tick) costs the event loop,
 * how late events reach the subscribers, and memory. Prints one JSON object.
 *
 *   npm run build && node dist/bench/stream.js [--programs 1000] [--subscribers 1000] [--seconds 20]
 *
 * Subscribers run in a worker thread (their own event loop on the other core) and each follows one
 * program (`?program=<id>`, so every subscriber gets that program's 3 s tick and its events). Latency:
 * a status event's `t` is the hub clock when the move happened; a tick's `t` is its 3-second slot
 * (so tick latency includes the pump period, up to 250 ms). Event-loop figures come from
 * perf_hooks.monitorEventLoopDelay and eventLoopUtilization of the hub's thread.
 */
import { request, Agent } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import pino from 'pino';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const r2 = (x: number) => Math.round(x * 100) / 100;
const mb = (x: number) => Math.round((x / 1048576) * 10) / 10;

interface WorkerIn {
  port: number;
  ids: string[];
  seconds: number;
}
interface WorkerOut {
  connected: number;
  tickLatency: number[];
  statusLatency: number[];
  ticks: number;
  events: number;
  bytes: number;
  errors: number;
}

async function subscribers(): Promise<void> {
  const { port, ids } = workerData as WorkerIn;
  const agent = new Agent({ keepAlive: true, maxSockets: Infinity });
  const out: WorkerOut = { connected: 0, tickLatency: [], statusLatency: [], ticks: 0, events: 0, bytes: 0, errors: 0 };
  const reqs: ReturnType<typeof request>[] = [];
  await Promise.all(
    ids.map(
      (id) =>
        new Promise<void>((resolve) => {
          const req = request({ host: '127.0.0.1', port, path: `/api/program/stream?program=${id}&access_token=bench`, agent, headers: { accept: 'text/event-stream' } }, (res) => {
            out.connected++;
            resolve();
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              out.bytes += chunk.length;
              buf += chunk;
              let cut: number;
              while ((cut = buf.indexOf('\n\n')) >= 0) {
                const block = buf.slice(0, cut);
                buf = buf.slice(cut + 2);
                let event = '';
                let data = '';
                for (const line of block.split('\n')) {
                  if (line.startsWith('event: ')) event = line.slice(7);
                  else if (line.startsWith('data: ')) data += line.slice(6);
                }
                if (!event) continue;
                const now = Date.now();
                const ev = JSON.parse(data) as { t: number };
                if (event === 'tick') {
                  out.ticks++;
                  out.tickLatency.push(now - ev.t);
                } else {
                  out.events++;
                  if (event === 'status') out.statusLatency.push(now - ev.t);
                }
              }
            });
            res.on('error', () => out.errors++);
          });
          req.on('error', () => {
            out.errors++;
            resolve();
          });
          req.end();
          reqs.push(req);
        }),
    ),
  );
  parentPort!.postMessage({ type: 'connected', connected: out.connected });
  parentPort!.once('message', () => {
    for (const r of reqs) r.destroy();
    parentPort!.postMessage({ type: 'done', out });
  });
}

async function main(): Promise<void> {
  const { Hub } = await import('../src/hub/index.js');
  const { openStore } = await import('../src/store/open.js');
  const { createBus } = await import('../src/bus.js');
  const { systemClock } = await import('../src/clock.js');
  const { ProgramService } = await import('../src/trading/programs.js');
  const { registerProgramRoutes } = await import('../src/trading/routes-programs.js');
  const { settingsSchema } = await import('../src/trading/engine.js');
  const { SYMBOLS } = await import('../src/trading/symbols.js');

  const PROGRAMS = arg('programs', 1000);
  const SUBSCRIBERS = arg('subscribers', 1000);
  const SECONDS = arg('seconds', 20);
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-stream-'));
  const memStart = process.memoryUsage();

  const hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1 << 20, webDir: './dist/web', shutdownGraceMs: 500 });
  const store = await openStore({ DATA_DIR: dir, REDIS_PREFIX: 'bench:' });
  const bus = createBus(store, 'bench');
  hub.attachBus(bus);
  // the subscribers follow the programs as an operator (the stream carries a caller's own programs)
  hub.authenticate(async (t) => (t === 'bench' ? { id: 'bench', name: 'bench', roles: ['operator'], kind: 'account' } : undefined), { superRole: 'operator' });
  await bus.start();
  let errors = 0;
  const svc = new ProgramService({ store, clock: systemClock, bus, barMs: 1000, leaseMs: 15_000, onError: () => errors++ });
  registerProgramRoutes(hub, { service: svc, bus });
  await svc.start();
  const port = await hub.listen('127.0.0.1', 0);

  // the pump's cost: wall time of each pump that processed at least one candle
  const pumps: number[] = [];
  const orig = svc.pump.bind(svc);
  svc.pump = () => {
    const t0 = performance.now();
    const p = orig();
    return p.then(() => {
      const ms = performance.now() - t0;
      if (ms > 0.5) pumps.push(ms);
    });
  };

  const ids: string[] = [];
  const t0 = performance.now();
  for (let i = 0; i < PROGRAMS; i++) {
    const p = await svc.create({
      strategy: 'ema_cross',
      symbol: SYMBOLS[i % SYMBOLS.length]!,
      params: { fast: 2 + (i % 5), slow: 8 + (i % 7) },
      settings: settingsSchema.parse({ stop_loss_atr: 1, take_profit_atr: 2 }),
    });
    await svc.move(p.id, 'start');
    ids.push(p.id);
  }
  const setupMs = performance.now() - t0;
  const memPrograms = process.memoryUsage();

  const worker = new Worker(new URL(import.meta.url), { workerData: { port, ids: Array.from({ length: SUBSCRIBERS }, (_, i) => ids[i % ids.length]!), seconds: SECONDS } satisfies WorkerIn });
  await new Promise<void>((resolve) => worker.once('message', () => resolve()));
  const memSubscribers = process.memoryUsage();

  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  pumps.length = 0;
  const elu0 = performance.eventLoopUtilization();
  const runStart = Date.now();
  // status events while running: pause and restart 50 programs spread over the run
  const moves = Math.min(50, ids.length);
  for (let i = 0; i < moves; i++) {
    await new Promise((r) => setTimeout(r, (SECONDS * 1000) / (moves + 1)));
    await svc.move(ids[i]!, 'pause');
    await svc.move(ids[i]!, 'start');
  }
  await new Promise((r) => setTimeout(r, Math.max(0, runStart + SECONDS * 1000 - Date.now())));
  const elu = performance.eventLoopUtilization(elu0);
  delay.disable();
  const memEnd = process.memoryUsage();

  worker.postMessage('stop');
  const out = await new Promise<WorkerOut>((resolve) => worker.on('message', (m: { type: string; out: WorkerOut }) => m.type === 'done' && resolve(m.out)));
  await worker.terminate();
  const stats = await svc.list();
  await svc.close();
  await hub.stop();
  await bus.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });

  const tl = out.tickLatency.sort((a, b) => a - b);
  const sl = out.statusLatency.sort((a, b) => a - b);
  const ps = pumps.sort((a, b) => a - b);
  const ns = (x: number) => r2(x / 1e6);
  console.log(
    JSON.stringify({
      bench: 'stream',
      node: process.version,
      programs: PROGRAMS,
      subscribers: SUBSCRIBERS,
      connected: out.connected,
      seconds: SECONDS,
      candle_ms: 1000,
      tick_ms: 3000,
      setup_ms: Math.round(setupMs),
      candles_per_program: Math.round(stats.reduce((a, p) => a + p.stats.bars, 0) / stats.length),
      trades_total: stats.reduce((a, p) => a + p.stats.trades, 0),
      pump_ms: { count: ps.length, p50: r2(pct(ps, 50)), p99: r2(pct(ps, 99)), max: r2(ps.at(-1) ?? 0) },
      event_loop_delay_ms: { p50: ns(delay.percentile(50)), p99: ns(delay.percentile(99)), max: ns(delay.max) },
      event_loop_utilization: r2(elu.utilization),
      tick_latency_ms: { count: tl.length, p50: pct(tl, 50), p99: pct(tl, 99), max: tl.at(-1) ?? 0 },
      status_latency_ms: { count: sl.length, p50: pct(sl, 50), p99: pct(sl, 99), max: sl.at(-1) ?? 0 },
      events_received: out.events,
      ticks_received: out.ticks,
      bytes_received: out.bytes,
      client_errors: out.errors,
      service_errors: errors,
      memory_mb: {
        start_rss: mb(memStart.rss),
        programs_rss: mb(memPrograms.rss),
        subscribers_rss: mb(memSubscribers.rss),
        end_rss: mb(memEnd.rss),
        end_heap_used: mb(memEnd.heapUsed),
        per_program_kb: Math.round((memPrograms.rss - memStart.rss) / PROGRAMS / 1024),
      },
    }),
  );
}

if (isMainThread) {
  main().then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
} else {
  void subscribers();
}
