import { startMaru, type Maru } from './app.js';
import { banner, bannerStream } from './banner.js';
import { demoBanner } from './demo/page.js';
import { loadConfigOrExit } from './config.js';
import { createLogger } from './log.js';
import { StartupRefusal } from './store/redis-startup.js';

// Process entry: read the configuration, start the hub, stop gracefully on SIGTERM/SIGINT.
const config = loadConfigOrExit();
const logger = createLogger(config.LOG_LEVEL);

// The handlers are in place before the hub starts: a signal that arrives while the services are
// still starting (the port may already answer) stops the hub gracefully once it is up.
let maru: Maru | undefined;
let signalled = false;
const stopNow = (m: Maru) =>
  m.stop().then(
    (abandoned) => {
      if (abandoned.length) logger.error({ abandoned }, 'stopped with work abandoned');
      process.exit(abandoned.length ? 1 : 0);
    },
    (err) => {
      logger.error({ err }, 'shutdown failed');
      process.exit(1);
    },
  );
const shutdown = (signal: string) => {
  if (signalled) return;
  signalled = true;
  logger.info({ signal, grace_ms: config.SHUTDOWN_GRACE_MS }, 'shutting down');
  // SHUTDOWN_GRACE_MS is a hard deadline: whatever the store, a peer or a request is doing then
  // (a Redis gone for good, a socket that never answers), the process exits, non-zero, saying where
  // it was (a second signal exits at once, the same way)
  const deadline = setTimeout(() => abandon('the shutdown deadline passed'), config.SHUTDOWN_GRACE_MS);
  deadline.unref();
  if (maru) void stopNow(maru);
};
const abandon = (why: string) => {
  logger.error({ step: maru?.stopStep() || 'starting', grace_ms: config.SHUTDOWN_GRACE_MS }, `${why}: exiting with work abandoned`);
  process.exit(1);
};
process.on('SIGTERM', () => (signalled ? abandon('a second SIGTERM') : shutdown('SIGTERM')));
// A rejected promise that nothing handled is a defect of the hub, never a client's doing: every
// promise a request makes is observed by the pipeline (src/hub/request-scoped.ts). Such a
// defect is logged (error level, with the request id when the error names one) and counted, and the
// process keeps serving: a rejection tears no state (the store's updates are atomic), while an exit
// would drop every socket of the process. An uncaught exception still ends it (Node's default).
process.on('unhandledRejection', (reason) => {
  const requestId = (reason as { requestId?: unknown } | null)?.requestId;
  logger.error({ err: reason, ...(typeof requestId === 'string' ? { requestId } : {}) }, 'unhandled rejection');
  maru?.hub.metrics.unhandledRejections.inc();
});
process.on('SIGINT', () => (signalled ? abandon('a second SIGINT') : shutdown('SIGINT')));

try {
  maru = await startMaru(config, { logger });
  if (signalled) void stopNow(maru);
  else {
    const configured = { admin: !!config.ADMIN_PASSWORD, partner: !!config.PARTNER_PASSWORD };
    await printBanner(maru, configured).catch((err) => logger.warn({ err }, 'the start-up banner was not printed'));
  }
} catch (err) {
  if (err instanceof StartupRefusal) {
    // a setting the operator has to change (the message names it): exit 2, like a bad configuration
    logger.fatal({ setting: err.setting }, err.message);
    console.error(err.message);
    process.exit(2);
  }
  logger.fatal({ err }, 'maru did not start');
  process.exit(1);
}

/** The plain start-up banner for a person at a terminal (src/banner.ts); the JSON logs stay as they are. */
async function printBanner(m: Maru, configured: { admin: boolean; partner: boolean }): Promise<void> {
  const demo = m.demo ? demoBanner(m.url, m.demo) : undefined;
  const out = bannerStream();
  if (!out) {
    // no terminal: the JSON lines only, but for a demo its tour address and password too
    if (demo) process.stdout.write(demo);
    return;
  }
  const index = await m.hub.inject('GET', '/pages', { headers: { accept: 'application/json' } });
  const pages = index.status === 200 ? (index.body.pages as { path: string; title: string }[]) : [];
  out.write(banner({ url: m.url, pages, passwords: m.passwords, configured, demo }));
}
