import { z } from 'zod';
import { createLogger } from '../log.js';
import { newWebhookSecret, startPaymentStandins } from '../payment/index.js';
import { startTaskLedgerStandin } from './task-ledger-standin.js';
import { startValueStandin } from './value-standin.js';

/**
 * `npm run peers`: starts the value service and task ledger stand-ins on loopback for development.
 * Environment: VALUE_STANDIN_PORT (default 8091), TASK_LEDGER_STANDIN_PORT (default 8092),
 * STANDIN_HOST (default 127.0.0.1), STANDIN_DELAY_MS and STANDIN_FAIL_RATE (default 0).
 * Point the hub at them with VALUE_SERVICE_URL=http://127.0.0.1:8091 and
 * TASK_LEDGER_URL=tcp://127.0.0.1:8092.
 * The payment relay's peers (docs/payment.md): banking (BANKING_STANDIN_PORT, default 8093), chain
 * (8094), broker (8095) and three price providers (8096-8098); the hub settings are printed, the
 * webhook secret from BANKING_WEBHOOK_SECRET or a fresh one.
 */
const env = z
  .object({
    VALUE_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8091),
    TASK_LEDGER_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8092),
    STANDIN_HOST: z.string().min(1).default('127.0.0.1'),
    BANKING_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8093),
    CHAIN_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8094),
    BROKER_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).default(8095),
    PRICE_STANDIN_PORT: z.coerce.number().int().min(0).max(65533).default(8096),
    BANKING_WEBHOOK_SECRET: z.string().min(16).optional(),
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
const webhookSecret = cfg.BANKING_WEBHOOK_SECRET ?? newWebhookSecret();
const payment = await startPaymentStandins({
  host: cfg.STANDIN_HOST,
  webhookSecret,
  ports: {
    banking: cfg.BANKING_STANDIN_PORT,
    chain: cfg.CHAIN_STANDIN_PORT,
    broker: cfg.BROKER_STANDIN_PORT,
    price1: cfg.PRICE_STANDIN_PORT,
    price2: cfg.PRICE_STANDIN_PORT === 0 ? 0 : cfg.PRICE_STANDIN_PORT + 1,
    price3: cfg.PRICE_STANDIN_PORT === 0 ? 0 : cfg.PRICE_STANDIN_PORT + 2,
  },
});
log.info(
  `payment settings: BANKING_URL=${payment.banking.url} SSO_JWKS_URL=${payment.banking.url}/.well-known/jwks.json SSO_AUDIENCE=maru ` +
    `BANKING_WEBHOOK_SECRET=${webhookSecret} CHAIN_URL=${payment.chain.url} BROKER_URL=${payment.broker.url} ` +
    `PRICE_PROVIDER_URLS=${payment.prices.map((p) => p.url).join(',')}`,
);

let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log.info({ signal }, 'stopping stand-ins');
  Promise.all([value.close(), ledger.close(), payment.close()]).then(
    () => process.exit(0),
    (err: unknown) => {
      log.error({ err }, 'stand-ins did not close cleanly');
      process.exit(1);
    },
  );
};
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
