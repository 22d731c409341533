import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { AuthService, SUPER_ROLE } from './auth/service.js';
import { openBlobStore, sweepOrphanBlobs, uploadTempDir } from './blobs/index.js';
import { createBus } from './bus.js';
import { demoBanner, registerDemo, seedDemo } from './demo.js';
import { offsetClock, systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { Rooms, busTransport } from './collab/rooms.js';
import { CollabService } from './collab/service.js';
import { chatIntake, chatMail } from './chat/intake-link.js';
import { ReferralService } from './chat/referral.js';
import { ChatService } from './chat/service.js';
import { CoachService } from './coach/service.js';
import { registerAuthRoutes } from './http/auth.js';
import { registerChatRoutes } from './http/chat.js';
import { registerCoachRoutes } from './http/coach.js';
import { registerIntakeMailRoutes } from './http/intake-mail.js';
import { registerCollabRoutes } from './http/collab.js';
import { registerRentalRoutes } from './http/rental.js';
import { IntakeService } from './intake/service.js';
import { Mailer, MAIL_DEST } from './mail/mailer.js';
import { PartnerAudit } from './rental/audit.js';
import { Review } from './rental/review.js';
import { RentalService } from './rental/service.js';
import { ClamdScanner } from './uploads/index.js';
import { registerRewardRoutes } from './http/reward.js';
import { registerTicketRoutes } from './http/ticket.js';
import { registerProgramRoutes } from './http/programs.js';
import { registerPaymentRoutes } from './http/payment.js';
import { registerTradingRoutes } from './http/trading.js';
import { Hub } from './hub/index.js';
import { createLogger } from './log.js';
import { Outbox } from './outbox.js';
import { createPayment } from './payment/wire.js';
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
    uploads: { tempDir: uploadTempDir(config), maxFileBytes: config.UPLOAD_MAX_BYTES },
  });

  const store = await openStore(config);
  // one name for this process: the Bus origin, the rooms' relay origin and the program leases' owner
  const processId = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const bus = createBus(store, processId, { logger: logger.child({ part: 'bus' }) });
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
  const partnerAudit = new PartnerAudit(store, () => clock.now());
  registerAuthRoutes(hub, {
    service: auth,
    onPartnerAttempt: ({ action, client, result }) =>
      partnerAudit.record({ actor: result === 'ok' ? 'partner' : '-', client, action, target: null, result, detail: null }),
  });

  const mailer = new Mailer({ store, clock, smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });

  // the payment relay's outbox deliverers are bound once the relay exists (below)
  const deliver: Record<string, import('./outbox.js').Deliver> = { ...rewardPeerDeliverers(config), [MAIL_DEST]: mailer.deliver };
  const outbox = new Outbox({
    store,
    clock,
    deliver,
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

  const blobs = await openBlobStore(config);
  const intake = new IntakeService({ store, clock });
  const rental = new RentalService({
    intake,
    store,
    clock,
    bus,
    blobs,
    onPublishError: (err) => logger.warn({ err }, 'rental event not published'),
    onBlobError: (err, key) => logger.warn({ err, key }, 'rental file not deleted'),
  });
  registerRentalRoutes(hub, {
    intake,
    service: rental,
    review: new Review(store, intake),
    audit: partnerAudit,
    blobs,
    scanner: config.CLAMD_URL ? new ClamdScanner(config.CLAMD_URL, { timeoutMs: config.CLAMD_TIMEOUT_MS }) : undefined,
    mailer,
    store,
    clock,
  });
  // uploaded files no record names (a crash between storing a file and writing its record)
  const sweepBlobs = () =>
    void sweepOrphanBlobs(blobs, (key) => rental.references(key), { graceMs: config.BLOB_ORPHAN_GRACE_MS, now: Date.now() }).catch((err) =>
      logger.warn({ err }, 'orphan blob sweep failed'),
    );
  const blobSweep = setInterval(sweepBlobs, Math.min(config.BLOB_ORPHAN_GRACE_MS, 600_000));
  blobSweep.unref();

  // guided conversation: registers its receipts through the intake service, mail through the outbox
  const referrals = new ReferralService({ store, clock });
  const chatIntakeLink = chatIntake(intake, store);
  const chat = new ChatService({
    store,
    clock,
    intake: chatIntakeLink,
    mail: chatMail(() => clock.now()),
    referrals,
    logger: logger.child({ part: 'chat' }),
    sessionTtlMs: config.CHAT_SESSION_TTL * 1000,
    idleRestartMs: config.CHAT_IDLE_RESTART * 1000,
  });
  registerChatRoutes(hub, {
    service: chat,
    referrals,
    countReceipts: () => chatIntakeLink.countReceipts(),
    store,
    clock,
    limits: {
      sessionsPerHour: config.CHAT_SESSIONS_PER_CLIENT,
      turnsPerMinute: config.CHAT_TURNS_PER_MINUTE,
      lookupsPerMinute: config.CHAT_LOOKUPS_PER_MINUTE,
    },
  });
  registerIntakeMailRoutes(hub, { intake, store, clock });
  registerCoachRoutes(hub, {
    service: new CoachService({ store, clock }),
    ownerSecret: config.COACH_OWNER_SECRET,
    store,
    clock,
    callsPerMinute: config.COACH_CALLS_PER_MINUTE,
  });

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
    owner: processId,
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

  const payment = await createPayment(config, { store, clock, bus, logger: logger.child({ part: 'payment' }), programs });
  Object.assign(deliver, payment.deliverers);
  payment.setKick(() => outbox.kick());
  registerPaymentRoutes(hub, payment);

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
    origin: processId,
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
  // DEMO=1 only: demo data through the services, the /demo page, and the URLs printed at start
  const demo = config.DEMO ? await seedDemo({ store, auth, tickets, reward, collab, programs }) : undefined;
  if (demo) registerDemo(hub, demo);

  const port = await hub.listen(config.HOST, config.PORT);
  outbox.start();
  payment.start();
  const host = config.HOST === '0.0.0.0' || config.HOST === '::' ? '127.0.0.1' : config.HOST;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  logger.info({ url, store: store.kind, port }, 'maru listening');
  if (demo) process.stdout.write(demoBanner(url, demo));

  let stopped: Promise<void> | undefined;
  return {
    hub,
    port,
    url,
    stop: () =>
      (stopped ??= (async () => {
        trading.jobs.cancelAll();
        await programs.close();
        await payment.stop();
        collab.close();
        clearInterval(blobSweep);
        await hub.stop();
        await rooms.close();
        await tradingPool.close();
        await outbox.stop();
        mailer.close();
        await bus.close();
        await store.close();
        logger.info('maru stopped');
      })()),
  };
}
