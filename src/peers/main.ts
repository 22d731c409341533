import { z } from 'zod';
import { createLogger } from '../log.js';
import { startTaskLedgerStandin } from './task-ledger-standin.js';
import { startValueStandin } from './value-standin.js';

/**
 * `npm run peers`: starts the value service and task ledger stand-ins on loopback for development.
 * Environment: VALUE_STANDIN_PORT (default 8091), TASK_LEDGER_STANDIN_PORT (default 8092),
 * STANDIN_HOST (default 127.0.0.1), STANDIN_DELAY_MS and STANDIN_FAIL_RATE (default 0).
 * Point the hub at them with VALUE_SERVICE_URL=http://127.0.0.1:8091 and
 * TASK_LEDGER_URL=tcp://127.0.0.1:8092.
 */
const env = z
  .object({
    VALUE_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8091),
    TASK_LEDGER_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8092),
    STANDIN_HOST: z.string().min(1).default('127.0.0.1'),
    STANDIN_DELAY_MS: z.coerce.number().int().min(0).default(0),
    STANDIN_FAIL_RATE: z.coerce.number().min(0).max(1).default(0),
    LOG_LEVEL: z.string().default('info'),
  })
  .safeParse(process.env);

if (!env.success) {
  console.error(`invalid configuration: ${env.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  process.exit(2);
}
const cfg = env.data;
const log = createLogger(cfg.LOG_LEVEL);
const knobs = { host: cfg.STANDIN_HOST, delayMs: cfg.STANDIN_DELAY_MS, failRate: cfg.STANDIN_FAIL_RATE };

const value = await startValueStandin({ ...knobs, port: cfg.VALUE_STANDIN_PORT });
const ledger = await startTaskLedgerStandin({ ...knobs, port: cfg.TASK_LEDGER_STANDIN_PORT });
const ledgerTcp = ledger.url.replace(/^http:/, 'tcp:');
log.info({ url: value.url }, 'value service stand-in listening');
log.info({ url: ledger.url, tcp: ledgerTcp }, 'task ledger stand-in listening');
log.info(`hub settings: VALUE_SERVICE_URL=${value.url} TASK_LEDGER_URL=${ledgerTcp}`);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping stand-ins');
  Promise.all([value.close(), ledger.close()]).then(
    () => process.exit(0),
    (err: unknown) => {
      log.error({ err }, 'stand-ins did not close cleanly');
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
