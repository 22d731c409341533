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
import { generateCandles, type Candles } from '../src/trading/candles.js';
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

async function gridThroughRoute() {
  const dir = mkdtempSync(join(tmpdir(), 'maru-bench-engine-'));
  const maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: dir, LOG_LEVEL: 'silent', TRADING_WORKERS: String(availableParallelism()) }),
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
    return {
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
  const grid = await gridThroughRoute();
  const goals = {
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
