import { startMaru } from './app.js';
import { loadConfig } from './config.js';
import { createLogger } from './log.js';

// Process entry: read the configuration, start the hub, stop gracefully on SIGTERM/SIGINT.
let config;
try {
  config = loadConfig();
} catch (err) {
  console.error((err as Error).message);
  process.exit(2);
}
const logger = createLogger(config.LOG_LEVEL);

try {
  const maru = await startMaru(config, { logger });
  let signalled = false;
  const shutdown = (signal: string) => {
    if (signalled) return;
    signalled = true;
    logger.info({ signal }, 'shutting down');
    maru.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
} catch (err) {
  logger.fatal({ err }, 'maru did not start');
  process.exit(1);
}
