import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { AuthService, SUPER_ROLE } from './auth/service.js';
import { createBus } from './bus.js';
import { offsetClock, systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { Rooms, busTransport } from './collab/rooms.js';
import { CollabService } from './collab/service.js';
import { registerAuthRoutes } from './http/auth.js';
import { registerCollabRoutes } from './http/collab.js';
import { registerRewardRoutes } from './http/reward.js';
import { registerTicketRoutes } from './http/ticket.js';
import { registerProgramRoutes } from './http/programs.js';
import { registerTradingRoutes } from './http/trading.js';
import { Hub } from './hub/index.js';
import { createLogger } from './log.js';
import { Outbox } from './outbox.js';
import { parseCharter } from './reward/charter.js';
import { rewardPeerDeliverers } from './reward/peers.js';
import { RewardService } from './reward/service.js';
import { WorkSignatureGuard } from './reward/signing.js';
import { openStore } from './store/open.js';
import { TicketService } from './ticket/service.js';
import { ProgramService } from './trading/programs.js';
import { TradingService } from './trading/service.js';
import { TradingPool } from './workers/pool.js';

export interface Maru {
  hub: Hub;
  port: number;
  url: string;
  stop(): Promise<void>;
}

/**
 * The composition root: config -> logger, clock -> store -> bus -> services -> routes -> listen.
 * Nothing else wires parts together.
 */
export async function startMaru(config: Config, opts: { logger?: Logger; clock?: Clock } = {}): Promise<Maru> {
  const logger = opts.logger ?? createLogger(config.LOG_LEVEL);
  const clock = opts.clock ?? (config.CLOCK_START ? offsetClock(Date.parse(config.CLOCK_START)) : systemClock);

  // refuses to construct on the uWS JavaScript fallback, before anything is opened
  const hub = new Hub({
    logger,
    bodyLimit: config.BODY_LIMIT,
    webDir: config.WEB_DIR,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
  });

  const store = await openStore(config);
  const bus = createBus(store, `${process.pid}-${randomBytes(4).toString('hex')}`, { logger: logger.child({ part: 'bus' }) });
  hub.attachBus(bus);
  await bus.start();
  hub.ready('store', () => store.ping());

  const auth = new AuthService({
    store,
    clock,
    logger: logger.child({ part: 'auth' }),
    tokenTtlMs: config.AUTH_TOKEN_TTL_MS,
    partnerTokenTtlMs: config.PARTNER_TOKEN_TTL,
    deviceTokenTtlMs: config.DEVICE_TOKEN_TTL_MS,
  });
  await auth.bootstrap({ admin: config.ADMIN_PASSWORD, partner: config.PARTNER_PASSWORD });
  hub.authenticate((token) => auth.authenticate(token), { superRole: SUPER_ROLE });
  registerAuthRoutes(hub, { service: auth });

  const outbox = new Outbox({
    store,
    clock,
    deliver: rewardPeerDeliverers(config),
    retryMinMs: config.OUTBOX_RETRY_MIN_MS,
    retryMaxMs: config.OUTBOX_RETRY_MAX_MS,
    logger: logger.child({ part: 'outbox' }),
  });
  const reward = new RewardService({
    store,
    clock,
    bus,
    charter: config.REWARD_CHARTER_FILE
      ? parseCharter(JSON.parse(readFileSync(config.REWARD_CHARTER_FILE, 'utf8')))
      : undefined,
  });
  registerRewardRoutes(hub, {
    service: reward,
    outbox,
    signatures: config.REWARD_SIGNING === 'required' ? new WorkSignatureGuard(store, clock) : undefined,
  });

  const tickets = new TicketService({
    store,
    clock,
    bus,
  });
  registerTicketRoutes(hub, { service: tickets, store, clock });

  const tradingPool = new TradingPool(config.TRADING_WORKERS);
  const trading = new TradingService({
    pool: tradingPool,
    bus,
    limits: {
      running: config.TRADING_JOBS_RUNNING || config.TRADING_WORKERS,
      queue: config.TRADING_QUEUE_MAX,
      perClient: config.TRADING_JOBS_PER_CLIENT,
      timeoutMs: config.TRADING_JOB_TIMEOUT_MS,
    },
  });
  registerTradingRoutes(hub, { service: trading });
  const programs = new ProgramService({
    store,
    clock,
    bus,
    barMs: Math.max(1, Math.floor(config.PROGRAM_CANDLE_MS / config.PROGRAM_SPEED)),
    leaseMs: config.PROGRAM_LEASE_MS,
    onError: (err) => logger.warn({ err }, 'program service error'),
  });
  registerProgramRoutes(hub, { service: programs, bus });
  hub.page('/reference', '/reference.html', {
    title: 'API reference',
    description: 'Every route, stream and socket of this hub, from /openapi.json (generated from the route table)',
  });
  hub.page('/trading', '/trading.html', {
    title: 'Trading programs',
    description: 'Live trading programs (state, P&L, log, signals, equity) and the backtest lab',
  });
  await programs.start();

  const collab = new CollabService({
    store,
    clock,
    bus,
    maxBytes: config.MD_MAX_BYTES,
    logger: logger.child({ part: 'collab' }),
  });
  registerCollabRoutes(hub, { service: collab });
  collab.start(config.MD_SWEEP_MS);
  const rooms = new Rooms({
    store,
    service: collab,
    origin: `${process.pid}-${randomBytes(4).toString('hex')}`,
    logger: logger.child({ part: 'rooms' }),
    debounceMs: config.MD_PERSIST_DEBOUNCE_MS,
    maxDelayMs: config.MD_PERSIST_MAX_MS,
    resyncMs: config.MD_RESYNC_MS,
    transport: busTransport(bus),
    clock,
  });
  const yjsPeers = hub.peers('/yjs/:slug', {
    maxPayloadLength: config.MD_MAX_BYTES * 4 + 4096,
    upgrade: ([slug]) => rooms.check(slug),
    open: (peer, slug) => rooms.open(peer, slug),
    message: (peer, bytes) => rooms.message(peer, bytes),
    close: (peer) => rooms.leave(peer),
  });
  rooms.useFanout(yjsPeers);

  const port = await hub.listen(config.HOST, config.PORT);
  outbox.start();
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, store: store.kind, port }, 'maru listening');

  let stopped: Promise<void> | undefined;
  return {
    hub,
    port,
    url,
    stop: () =>
      (stopped ??= (async () => {
        trading.jobs.cancelAll();
        await programs.close();
        collab.close();
        await hub.stop();
        await rooms.close();
        await tradingPool.close();
        await outbox.stop();
        await bus.close();
        await store.close();
        logger.info('maru stopped');
      })()),
  };
}
