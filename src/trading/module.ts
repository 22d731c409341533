import { registerProgramRoutes } from './routes-programs.js';
import { registerTradingRoutes } from './routes.js';
import { livePrograms } from './program-port.js';
import { ProgramService } from './programs.js';
import { TradingService } from './service.js';
import { TradingPool } from '../workers/pool.js';
import { BullChunkRunner } from '../workers/queue.js';
import { defineService } from '../compose/compose.js';

/** Backtests and analyses on worker threads, and the live programs on the shared market (docs/trading.md). */
export const tradingModule = defineService({
  name: 'trading',
  needs: [],
  provides: ['programs', 'livePrograms', 'tradingJobs'],
  async build(p) {
    const { config, store, clock, bus, logger, processId, redis } = p;
    const pool = new TradingPool(config.TRADING_WORKERS);
    // with Redis, grid / walk-forward / Monte Carlo chunks are shared by every process (docs/trading.md)
    const spread = redis
      ? new BullChunkRunner({
          redis,
          prefix: config.REDIS_PREFIX,
          pool,
          lockMs: config.TRADING_CHUNK_LOCK_MS,
          chunks: config.TRADING_CHUNKS || undefined,
          onError: (err) => logger.warn({ err }, 'trading queue error'),
        })
      : undefined;
    await spread?.start();
    const trading = new TradingService({
      pool,
      spread,
      bus,
      limits: {
        running: config.TRADING_JOBS_RUNNING || config.TRADING_WORKERS,
        queue: config.TRADING_QUEUE_MAX,
        perClient: config.TRADING_JOBS_PER_CLIENT,
        timeoutMs: config.TRADING_JOB_TIMEOUT_MS,
      },
    });
    const programs = new ProgramService({
      store,
      clock,
      bus,
      barMs: Math.max(1, Math.floor(config.PROGRAM_CANDLE_MS / config.PROGRAM_SPEED)),
      leaseMs: config.PROGRAM_LEASE_MS,
      owner: processId,
      onError: (err) => logger.warn({ err }, 'program service error'),
    });
    let unlisten: (() => void) | undefined;
    return {
      name: 'trading',
      ports: { programs, livePrograms: livePrograms(programs), tradingJobs: trading.jobs },
      routes(hub) {
        registerTradingRoutes(hub, { service: trading });
        unlisten = registerProgramRoutes(hub, { service: programs, bus });
        hub.page('/trading', '/trading.html', {
          title: 'Trading programs',
          description: 'Live trading programs (state, P&L, log, signals, equity) and the backtest lab',
        });
      },
      start: () => programs.start(),
      async stop() {
        trading.jobs.cancelAll();
        await programs.close();
      },
      async close() {
        unlisten?.();
        await spread?.close();
        await pool.close();
      },
    };
  },
});
