import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { uploadTempDir } from './blobs/index.js';
import { createBus } from './bus.js';
import { offsetClock, systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { Hub } from './hub/index.js';
import type { DemoSummary } from './demo/seed.js';
import { createLogger } from './log.js';
import { runPhase } from './compose/module.js';
import { compose } from './compose/compose.js';
import type { Built, Platform } from './contract.js';
import { SERVICES } from './compose/services.js';
import { openStore } from './store/open.js';
import { parseTrustedProxies } from './hub/client-address.js';
import { redisTarget } from './store/redis-connection.js';

export interface Maru {
  hub: Hub;
  port: number;
  url: string;
  /** Passwords this start made (the operator's and partner's at the first start, the demo accounts'): the banner prints them (src/banner.ts). */
  passwords: { user: string; password: string }[];
  /** With DEMO=1, the demo's summary (the tour key, the accounts): the start banner's demo lines. */
  demo?: DemoSummary | undefined;
  /**
   * Stops gracefully: the modules, the hub (requests in flight get until SHUTDOWN_GRACE_MS less a
   * reserve for the closing steps), the modules' close, the bus, the store. Resolves with the work it
   * abandoned (empty when none).
   */
  stop(): Promise<string[]>;
  /** The step the stop is in ('' before it starts), for the exit at the shutdown deadline (main.ts). */
  stopStep(): string;
}

/**
 * The composition root: config -> logger, clock -> store -> bus -> the service modules (src/<service>/module.ts)
 * -> their routes -> listen -> their start. Shutdown: the modules' stop in reverse, the hub, the
 * modules' close in reverse, the bus, the store. Nothing else wires parts together.
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
    uploads: { tempDir: uploadTempDir(config), maxFileBytes: config.UPLOAD_MAX_BYTES },
    authRecheckMs: config.AUTH_RECHECK_MS,
    connections: { perAddress: config.CONN_MAX_PER_ADDRESS, perIdentity: config.CONN_MAX_PER_IDENTITY },
    wsMaxFrame: config.WS_MAX_FRAME_BYTES,
    wsIdleTimeoutS: config.WS_IDLE_TIMEOUT_S,
    trustedProxies: parseTrustedProxies(config.TRUST_PROXY),
    wsMessageBudget: { perSecond: config.WS_MESSAGES_PER_S, burst: config.WS_MESSAGE_BURST },
  });

  // a Redis that cannot keep what it acknowledges refuses the start (StartupRefusal, exit 2 in main.ts)
  const store = await openStore(config, (message) => logger.warn({ part: 'store' }, message));
  // one name for this process: the Bus origin, the rooms' relay origin and the program leases' owner
  const processId = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const bus = createBus(store, processId, { logger: logger.child({ part: 'bus' }), lingerMs: config.BUS_LINGER_MS });
  hub.attachBus(bus);
  await bus.start();
  hub.ready('store', () => store.ping());
  // the hub's own guards (hub.rateLimit) count in the store on this clock
  hub.useState(store, clock);

  const platform: Platform = { config, logger, clock, store, bus, processId, redis: redisTarget(config) };

  // the services: built, routed and started in the order of what each needs of the others
  // (src/compose/compose.ts); shutdown runs them in reverse
  const modules = await compose(SERVICES, platform);
  for (const m of modules) hub.service(m.name, (h) => m.routes(h));
  hub.page('/reference', '/reference.html', {
    title: 'API reference',
    description: '이 허브의 모든 경로, 스트림, 소켓 (경로 표에서 만든 /openapi.json)',
  });

  const port = await hub.listen(config.HOST, config.PORT);
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  await runPhase(modules, 'start', logger, { url });
  logger.info({ url, store: store.kind, port }, 'maru listening');
  const demo = modules.find((m): m is Built<'demo'> => m.name === 'demo');
  const auth = modules.find((m): m is Built<'auth'> => m.name === 'auth');
  const passwords = [
    ...(auth?.ports.auth.generated ?? []),
    ...(demo ? demo.ports.demo.accounts.map((a) => ({ user: a.user, password: demo.ports.demo.password })) : []),
  ];

  let stopped: Promise<string[]> | undefined;
  let step = '';
  return {
    hub,
    port,
    url,
    passwords,
    demo: demo?.ports.demo,
    stopStep: () => step,
    stop: () =>
      (stopped ??= (async () => {
        const grace = config.SHUTDOWN_GRACE_MS;
        // the requests in flight may use the grace less a reserve for the steps after them
        const requestsUntil = Date.now() + grace - Math.min(1000, Math.floor(grace / 4));
        const abandoned: string[] = [];
        step = 'stopping the services';
        await runPhase(modules, 'stop', logger);
        step = 'waiting for requests in flight';
        const unanswered = await hub.stop(requestsUntil);
        if (unanswered > 0) abandoned.push(`${unanswered} request(s) unanswered`);
        step = 'closing the services';
        await runPhase(modules, 'close', logger);
        step = 'closing the bus';
        await bus.close();
        step = 'closing the store';
        await store.close();
        step = 'stopped';
        logger.info({ abandoned }, 'maru stopped');
        return abandoned;
      })()),
  };
}
