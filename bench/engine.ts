/**
 * bench/engine: the trading engine's speed. Prints one JSON object.
 *
 *   npm run build && node dist/bench/engine.js [--candles 1000000] [--grid-candles 100000] [--repeat 3]
 *
 * 1. Single backtest, one core: each strategy with default parameters and default settings on the
 *    same 1M one-minute ES candles (generated once, not timed); the time of the strategy + engine
 *    loop (runStrategy) and of the whole backtest with metrics; best of `repeat`. Candles per second
 *    of wall time, and of CPU time for the loop (process.cpuUsage; steadier on a shared machine).
 * 2. Side by side: EMA cross + ATR stop/target written the way a JavaScript user would with the
 *    `technicalindicators` library (candles as objects, EMA.calculate / ATR.calculate, a loop over
 *    bars with the same fill rules), on the same candles; the ratio of the two throughputs.
 * 3. A 500-combination ema_cross grid on `grid-candles` one-minute candles end to end through
 *    POST /api/program/optimize on an in-process hub (Piscina, TRADING_WORKERS = cores): wall time,
 *    and the hub's event-loop delay (perf_hooks, 1 ms resolution) p50/p99/max during the request;
 *    then the same request again (`repeated`: the workers already hold the candles and their
 *    indicator series, as for a second grid on the same market data).
 * 4. The data-set case (docs/trading.md "Data sets"): the same `grid-candles` one-minute candles
 *    written as CSV and uploaded by a trader through POST /api/program/datasets (parse, check, hash
 *    and store: wall time and rows/s), then the same 500-combination grid on the data set through
 *    the route (first: the bars read from the store, hashed and shared with the workers; repeated:
 *    in memory), its answer checked equal to the synthetic one but for `candles`; and the single
 *    backtests of part 1 on a data set of the largest size (200,000 bars) read through the shared
 *    buffer the workers see.
 */
import { mkdtempSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { ATR as TiATR, EMA as TiEMA } from 'technicalindicators';
import { startMaru } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { runStrategy } from '../src/trading/analyses.js';
import { candlesOfShared, generateCandles, sharedCandles, type Candles } from '../src/trading/candles.js';
import { DATASET_MAX_ROWS } from '../src/trading/datasets.js';
import { defaultSettings, type Settings } from '../src/trading/engine.js';
import { computeMetrics } from '../src/trading/metrics.js';
import { STRATEGIES, STRATEGY_DEFS } from '../src/trading/strategies.js';
import { SYMBOL_SPECS } from '../src/trading/symbols.js';

const { values: args } = parseArgs({
  options: {
    candles: { type: 'string', default: '1000000' },
    'grid-candles': { type: 'string', default: '100000' },
    repeat: { type: 'string', default: '3' },
  },
});
const N = Number(args.candles);
const GRID_N = Number(args['grid-candles']);
const REPEAT = Number(args.repeat);

/** CPU time (ms) of the best repetition of the last `best` call: the steadier figure on a shared machine. */
let lastCpu = 0;
function best(fn: () => void): number {
  let min = Infinity;
  lastCpu = Infinity;
  fn(); // warm-up (JIT)
  for (let k = 0; k < REPEAT; k++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    fn();
    min = Math.min(min, performance.now() - t0);
    const c = process.cpuUsage(c0);
    lastCpu = Math.min(lastCpu, (c.user + c.system) / 1000);
  }
  return min;
}
const perSec = (n: number, ms: number) => Math.round((n / ms) * 1000);

/** EMA cross with ATR stop/target the way a JavaScript user writes it with technicalindicators. */
function naiveEmaCross(rows: { open: number; high: number; low: number; close: number }[], s: Settings, pointValue: number, tick: number) {
  const closes = rows.map((r) => r.close);
  const fast = TiEMA.calculate({ period: 9, values: closes });
  const slow = TiEMA.calculate({ period: 21, values: closes });
  const atr = TiATR.calculate({ period: s.atr_period, high: rows.map((r) => r.high), low: rows.map((r) => r.low), close: closes });
  const fastAt = (i: number) => fast[i - 8];
  const slowAt = (i: number) => slow[i - 20];
  const atrAt = (i: number) => atr[i - s.atr_period];
  const slip = s.slippage_ticks * tick;
  let pos: { dir: number; entry: number; sl: number; tp: number } | null = null;
  let pending = 0;
  let pendAtr = 0;
  const trades: { pnl: number }[] = [];
  let cash = s.capital;
  const equity: number[] = [];
  const close = (price: number) => {
    const gross = pos!.dir * (price - pos!.entry) * pointValue;
    cash += gross - s.commission;
    trades.push({ pnl: gross - 2 * s.commission });
    pos = null;
  };
  for (let i = 0; i < rows.length; i++) {
    const bar = rows[i]!;
    if (pending !== 0) {
      if (pos && pos.dir !== pending) close(bar.open - pos.dir * slip);
      if (!pos) {
        const entry: number = bar.open + pending * slip;
        pos = { dir: pending, entry, sl: entry - pending * s.stop_loss_atr * pendAtr, tp: entry + pending * s.take_profit_atr * pendAtr };
        cash -= s.commission;
      }
      pending = 0;
    }
    if (pos) {
      if (pos.dir === 1) {
        if (bar.open <= pos.sl) close(bar.open - slip);
        else if (bar.open >= pos.tp) close(bar.open);
        else if (bar.low <= pos.sl) close(pos.sl - slip);
        else if (bar.high >= pos.tp) close(pos.tp);
      } else {
        if (bar.open >= pos.sl) close(bar.open + slip);
        else if (bar.open <= pos.tp) close(bar.open);
        else if (bar.high >= pos.sl) close(pos.sl + slip);
        else if (bar.low <= pos.tp) close(pos.tp);
      }
    }
    equity.push(pos ? cash + pos.dir * (bar.close - pos.entry) * pointValue : cash);
    const f = fastAt(i);
    const sl = slowAt(i);
    const pf = fastAt(i - 1);
    const ps = slowAt(i - 1);
    const a = atrAt(i);
    if (f !== undefined && sl !== undefined && pf !== undefined && ps !== undefined && a !== undefined && i + 1 < rows.length) {
      if (f - sl > 0 && pf - ps <= 0) (pending = 1), (pendAtr = a);
      else if (f - sl < 0 && pf - ps >= 0) (pending = -1), (pendAtr = a);
    }
  }
  return { trades: trades.length, final: cash };
}

const ADMIN = 'bench-admin-password';

/** A trader's token on the bench hub (the operator creates the account). */
async function traderToken(url: string): Promise<string> {
  const login = async (user: string, password: string) =>
    ((await (await fetch(`${url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user, password }) })).json()) as { token: string }).token;
  const admin = await login('admin', ADMIN);
  await fetch(`${url}/api/auth/accounts`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}` }, body: JSON.stringify({ user: 'bench-trader', password: 'bench-trader-secret', roles: ['trader'] }) });
  return login('bench-trader', 'bench-trader-secret');
}

function csvOf(cs: Candles): string {
  const out = ['time,open,high,low,close,volume'];
  for (let i = 0; i < cs.n; i++) out.push(`${new Date(cs.t[i]!).toISOString()},${cs.o[i]},${cs.h[i]},${cs.l[i]},${cs.c[i]},${cs.v[i]}`);
  return out.join('\n') + '\n';
}

/** Part 4 on the hub of part 3: upload the grid's candles as a data set, then the same grid on it. */
async function datasetGrid(url: string, grid: Record<string, number[]>, synthetic: unknown) {
  const token = await traderToken(url);
  const csv = csvOf(generateCandles({ seed: 1, symbol: 'ES', timeframe: '1m', count: GRID_N }));
  const form = new FormData();
  form.set('name', 'bench');
  form.set('symbol', 'ES');
  form.set('file', new Blob([csv], { type: 'text/csv' }), 'bench.csv');
  const u0 = performance.now();
  const up = await fetch(`${url}/api/program/datasets`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}` } });
  const uploaded = (await up.json()) as { dataset: { id: string; hash: string; bars: number } };
  const uploadMs = performance.now() - u0;
  const body = JSON.stringify({ dataset: uploaded.dataset.id, seed: 1, strategy: 'ema_cross', grid });
  const request = async () => {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = await fetch(`${url}/api/program/optimize`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body });
    const out = (await res.json()) as { combinations: number; candles: { hash: string } };
    const cpu = process.cpuUsage(c0);
    return { status: res.status, out, wall_ms: Math.round(performance.now() - t0), cpu_ms_all_threads: Math.round((cpu.user + cpu.system) / 1000) };
  };
  const first = await request();
  const again = await request();
  const { candles: _a, ...mine } = first.out as unknown as Record<string, unknown>;
  const { candles: _b, ...theirs } = synthetic as Record<string, unknown>;
  return {
    upload: { status: up.status, rows: uploaded.dataset.bars, csv_bytes: csv.length, wall_ms: Math.round(uploadMs), rows_per_s: perSec(uploaded.dataset.bars, uploadMs) },
    grid_500: {
      status: first.status,
      combinations: first.out.combinations,
      hash_in_answer: first.out.candles.hash === uploaded.dataset.hash,
      same_as_synthetic: JSON.stringify(mine) === JSON.stringify(theirs),
      wall_ms: first.wall_ms,
      cpu_ms_all_threads: first.cpu_ms_all_threads,
      bar_evaluations_per_s: perSec(first.out.combinations * GRID_N, first.wall_ms),
      repeated: { status: again.status, same_answer: JSON.stringify(again.out) === JSON.stringify(first.out), wall_ms: again.wall_ms, cpu_ms_all_threads: again.cpu_ms_all_threads },
    },
  };
}

/** Part 4's single backtests: candles read through the shared buffer a data set reaches the workers in. */
function datasetSingles(settings: Settings) {
  const n = DATASET_MAX_ROWS;
  const src = generateCandles({ seed: 2, symbol: 'ES', timeframe: '1m', count: n });
  const columns = new Float64Array(n * 6);
  [src.t, src.o, src.h, src.l, src.c, src.v].forEach((col, k) => columns.set(col, k * n));
  const cs = candlesOfShared(sharedCandles(columns, n), 'ES', '1m');
  const out: Record<string, unknown> = {};
  for (const id of STRATEGIES) {
    const params = STRATEGY_DEFS[id].schema.parse({});
    let trades = 0;
    const loop = best(() => {
      trades = runStrategy(cs, id, params, settings).trades.n;
    });
    out[id] = { trades, same_trades_as_generated: trades === runStrategy(src, id, params, settings).trades.n, candles_per_s: perSec(n, loop), candles_per_cpu_s: perSec(n, lastCpu) };
  }
  return { bars: n, single_backtest: out };
}

async function gridThroughRoute() {
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-engine-'));
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', TRADING_WORKERS: String(availableParallelism()), ADMIN_PASSWORD: ADMIN }),
    { logger: pino({ level: 'silent' }) },
  );
  const grid = { fast: Array.from({ length: 20 }, (_, i) => 2 + i), slow: Array.from({ length: 25 }, (_, i) => 30 + i) };
  const body = JSON.stringify({ symbol: 'ES', timeframe: '1m', count: GRID_N, seed: 1, strategy: 'ema_cross', grid });
  const request = () => fetch(`${maru.url}/api/program/optimize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  try {
    // warm the workers once (thread start, JIT) on a small grid
    await fetch(`${maru.url}/api/program/optimize`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ symbol: 'ES', count: 5000, strategy: 'ema_cross' }),
    }).then((r) => r.text());
    const h = monitorEventLoopDelay({ resolution: 1 });
    h.enable();
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const res = await request();
    const out = (await res.json()) as { combinations: number };
    const wall = performance.now() - t0;
    const cpu = process.cpuUsage(c0);
    h.disable();
    // the same request again: the workers now hold these candles and their indicator series
    const c1 = process.cpuUsage();
    const t1 = performance.now();
    const again = await request();
    const same = JSON.stringify((await again.json()) as unknown) === JSON.stringify(out);
    const wallAgain = performance.now() - t1;
    const cpuAgain = process.cpuUsage(c1);
    const dataset = await datasetGrid(maru.url, grid, out);
    return {
      dataset,
      status: res.status,
      combinations: out.combinations,
      candles: GRID_N,
      workers: availableParallelism(),
      wall_ms: Math.round(wall),
      cpu_ms_all_threads: Math.round((cpu.user + cpu.system) / 1000),
      bar_evaluations_per_s: perSec(out.combinations * GRID_N, wall),
      event_loop_delay_ms: {
        p50: +(h.percentile(50) / 1e6).toFixed(2),
        p99: +(h.percentile(99) / 1e6).toFixed(2),
        max: +(h.max / 1e6).toFixed(2),
      },
      repeated: { status: again.status, same_answer: same, wall_ms: Math.round(wallAgain), cpu_ms_all_threads: Math.round((cpuAgain.user + cpuAgain.system) / 1000) },
    };
  } finally {
    await maru.stop();
  }
}

async function main() {
  const cs: Candles = generateCandles({ seed: 1, symbol: 'ES', timeframe: '1m', count: N });
  const settings = defaultSettings();
  const single: Record<string, unknown> = {};
  for (const id of STRATEGIES) {
    const params = STRATEGY_DEFS[id].schema.parse({});
    let trades = 0;
    const loop = best(() => {
      trades = runStrategy(cs, id, params, settings).trades.n;
    });
    const loopCpu = lastCpu;
    const full = best(() => {
      computeMetrics(runStrategy(cs, id, params, settings), cs);
    });
    single[id] = { trades, candles_per_s: perSec(N, loop), candles_per_cpu_s: perSec(N, loopCpu), with_metrics_candles_per_s: perSec(N, full) };
  }
  const rows = Array.from({ length: N }, (_, i) => ({ open: cs.o[i]!, high: cs.h[i]!, low: cs.l[i]!, close: cs.c[i]! }));
  let naive = { trades: 0, final: 0 };
  const spec = SYMBOL_SPECS.ES;
  const naiveMs = best(() => {
    naive = naiveEmaCross(rows, settings, spec.pointValue, spec.tick);
  });
  const ours = (single.ema_cross as { candles_per_s: number }).candles_per_s;
  const naivePerS = perSec(N, naiveMs);
  const { dataset: datasetRoute, ...grid } = await gridThroughRoute();
  const dataset = { ...datasetSingles(settings), ...datasetRoute };
  const goals = {
    dataset_single_backtest_20M_per_cpu_s: Object.values(dataset.single_backtest).every((s) => (s as { candles_per_cpu_s: number }).candles_per_cpu_s >= 20_000_000),
    dataset_grid_under_half_s: dataset.grid_500.wall_ms < 500,
    single_backtest_20M_per_s: Object.values(single).every((s) => (s as { candles_per_s: number }).candles_per_s >= 20_000_000),
    single_backtest_20M_per_cpu_s: Object.values(single).every((s) => (s as { candles_per_cpu_s: number }).candles_per_cpu_s >= 20_000_000),
    grid_under_half_s: grid.wall_ms < 500,
    lag_p99_under_20ms: grid.event_loop_delay_ms.p99 < 20,
  };
  console.log(
    JSON.stringify({
      bench: 'engine',
      node: process.version,
      cores: availableParallelism(),
      load_average: loadavg().map((x) => +x.toFixed(2)),
      candles: N,
      single_backtest: single,
      technicalindicators_ema_cross: { candles_per_s: naivePerS, trades: naive.trades, ours_trades: (single.ema_cross as { trades: number }).trades, ratio_ours_to_theirs: +(ours / naivePerS).toFixed(1) },
      grid_500_via_route: grid,
      dataset,
      goals,
    }),
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
