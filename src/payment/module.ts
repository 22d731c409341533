import { Counter } from 'prom-client';
import type { Config } from '../config.js';
import { registerPaymentRoutes } from './routes.js';
import { registerSettlementRoutes } from './routes-settlement.js';
import { registerPaymentChainRoutes } from './routes-chain.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from './standins.js';
import { createPayment } from './relay.js';
import { defineService } from '../contract.js';
import type { Payment } from './relay.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    payment: Payment;
  }
}

/**
 * The token payment relay (docs/payment.md): its peers' deliverers join the outbox through the
 * `deliverers` port, as every service's do, and it kicks the outbox when it enqueues; a bought challenge runs as a live program through the trading service's `livePrograms`
 * port, whose events every process follows from here.
 */
export const paymentModule = defineService({
  name: 'payment',
  needs: ['livePrograms', 'outbox', 'deliverers'],
  provides: ['payment'],
  async build(p, { livePrograms, outbox, deliverers }) {
    const { config } = p;
    const logger = p.logger.child({ part: 'payment' });
    // DEMO=1 without a configured bank runs the payment peers' stand-ins in-process, so the demo
    // wallet works; a plain start never does (PAYMENT_PEERS=embedded is the only other way to get them)
    const demoPeers = config.DEMO && config.PAYMENT_PEERS === 'off' && !config.BANKING_URL;
    let standins: PaymentStandins | undefined;
    let cfg = config;
    if (demoPeers || config.PAYMENT_PEERS === 'embedded') {
      const webhookSecret = config.BANKING_WEBHOOK_SECRET ?? newWebhookSecret();
      standins = await startPaymentStandins({ webhookSecret });
      cfg = withStandins(config, standins, webhookSecret);
      logger.info({ banking: standins.banking.url, chain: standins.chain.url }, 'payment stand-ins started in-process');
    }
    const payment = createPayment(cfg, { store: p.store, clock: p.clock, bus: p.bus, logger, kick: () => outbox.kick(), programs: livePrograms, standins });
    deliverers.add(payment.deliverers);
    // every process applies the programs' fills and stops to their challenges (each event id once)
    const unfollow = payment.program?.follow();
    return {
      name: 'payment',
      ports: { payment },
      routes: (hub) => {
        // refused tree heads (forged, out of order, a rewritten log), by code and source (watch, chain, operator)
        if (payment.treeHeads) {
          const alarms = new Counter({ name: 'chain_tree_head_alarms_total', help: 'Signed tree heads of the chain the hub refused, by code and source', labelNames: ['code', 'source'] as const, registers: [hub.metrics.registry] });
          payment.treeHeads.onAlarm = (code, source) => alarms.labels(code, source.startsWith('operator:') ? 'operator' : source).inc();
        }
        registerPaymentRoutes(hub, payment);
        registerSettlementRoutes(hub, payment);
        registerPaymentChainRoutes(hub, payment);
      },
      start: (listening) => payment.start(listening),
      async stop() {
        unfollow?.();
        await payment.stop();
        await standins?.close();
      },
    };
  },
});

/** The settings with the embedded stand-ins' addresses and keys wherever the configuration names none. */
function withStandins(config: Config, standins: PaymentStandins, webhookSecret: string): Config {
  return {
    ...config,
    BANKING_WEBHOOK_SECRET: webhookSecret,
    BANKING_URL: config.BANKING_URL ?? standins.banking.url,
    SSO_JWKS_URL: config.SSO_JWKS_URL ?? (config.SSO_PUBLIC_KEY ? undefined : `${standins.banking.url}/.well-known/jwks.json`),
    // the stand-in bank issues its tokens for the audience `maru` (src/payment/standins.ts)
    SSO_AUDIENCE: config.SSO_AUDIENCE ?? (config.SSO_JWKS_URL || config.SSO_PUBLIC_KEY ? undefined : 'maru'),
    CHAIN_URL: config.CHAIN_URL ?? standins.chain.url,
    CHAIN_PUBLIC_KEY: config.CHAIN_PUBLIC_KEY ?? (config.CHAIN_URL ? undefined : standins.chain.state.publicKey),
    BROKER_URL: config.BROKER_URL ?? standins.broker.url,
    PRICE_PROVIDER_URLS: config.PRICE_PROVIDER_URLS ?? standins.prices.map((s) => s.url).join(','),
  };
}
