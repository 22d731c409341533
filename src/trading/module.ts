import { registerProgramRoutes } from './routes-programs.js';
import { registerTradingRoutes } from './routes.js';
import { livePrograms } from './program-port.js';
import { ProgramService } from './programs.js';
import { TradingService } from './service.js';
import { DatasetService } from './datasets.js';
import { RunService } from './runs.js';
import { ALERT_DEST, AlertService, alertDeliverer } from './alerts.js';
import { registerAlertRoutes } from './routes-alerts.js';
import { TradingPool } from '../workers/pool.js';
import { BullChunkRunner } from '../workers/queue.js';
import { defineService } from '../contract.js';
import type { Jobs } from './jobs.js';
import type { LivePrograms } from './program-port.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    programs: ProgramService;
    /** Live programs another service runs as its own (the payment relay's challenges; src/trading/program-port.ts). */
    livePrograms: LivePrograms;
    /** This process's trading job queue (admitted, running, waiting, the bounds), for the operator console. */
    tradingJobs: Pick<Jobs, 'stats'>;
  }
}

/** Backtests and analyses on worker threads, and the live programs on the shared market (docs/trading.md). */
export const tradingModule = defineService({
  name: 'trading',
  needs: ['outbox', 'deliverers'],
  provides: ['programs', 'livePrograms', 'tradingJobs'],
  async build(p, { outbox, deliverers }) {
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
      // alerts: a program's events go to its webhook through the outbox (docs/trading.md "Alerts")
      alerts: { kick: () => outbox.kick(), keepAfterDeleteMs: config.ALERTS_KEEP_AFTER_DELETE_MS },
    });
    deliverers.add({ [ALERT_DEST]: alertDeliverer(store, { allowPrivate: config.ALERTS_ALLOW_PRIVATE, now: () => clock.now() }) });
    const alerts = new AlertService(store, { allowPrivate: config.ALERTS_ALLOW_PRIVATE, now: () => clock.now() });
    let unlisten: (() => void) | undefined;
    return {
      name: 'trading',
      ports: { programs, livePrograms: livePrograms(programs), tradingJobs: trading.jobs },
      routes(hub) {
        registerTradingRoutes(hub, { service: trading, datasets: new DatasetService(store), runs: new RunService(store) });
        unlisten = registerProgramRoutes(hub, { service: programs, bus, warn: (obj, msg) => logger.warn(obj, msg) }).off;
        registerAlertRoutes(hub, { programs, alerts });
        hub.page('/trading', '/trading.html', {
          title: 'Trading programs',
          description: '실시간 자동매매 프로그램(상태, 손익, 로그, 신호, 자산 곡선)과 백테스트 실험실',
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
