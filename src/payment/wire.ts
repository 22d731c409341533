import type { Logger } from 'pino';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Deliver } from '../outbox.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../peers/payment-standins.js';
import type { Store } from '../store/port.js';
import { settingsSchema } from '../trading/engine.js';
import { PROGRAM_EVENTS_TOPIC, programEvents } from '../trading/programs.js';
import { Idempotency } from '../idempotency.js';
import { ChallengeLifecycle } from './lifecycle.js';
import { PegService } from './peg.js';
import { BankingClient, BrokerClient, ChainClient, PriceProviderClient, paymentDeliverers } from './peers.js';
import { PayoutService } from './payouts.js';
import { ppm } from './rules.js';
import { PaymentService, type ChallengeProgramPort, type ChallengeRecord } from './service.js';
import { SsoVerifier } from './sso.js';
import { chainPublicKey, rawPublicKey } from './sth.js';
import { TreeHeads } from './tree-heads.js';
import { Reconciler } from './reconcile.js';
import { Settlement } from './settlement.js';

/**
 * Builds the payment relay from the config (src/app.ts calls this): peers' clients (or the embedded
 * stand-ins), SSO, peg, ledger services, the outbox deliverers, and the binding of challenges to live
 * trading programs through the program service's public methods and its events on the Bus.
 */

/** What the payment relay needs of the trading program service (ProgramService satisfies it). */
export interface ProgramsPort {
  create(input: { name?: string; strategy: 'ema_cross'; symbol: 'ES'; params: Record<string, number>; settings: ReturnType<typeof settingsSchema.parse> }): Promise<{ id: string }>;
  move(id: string, move: 'start'): Promise<unknown>;
}

const PROGRAM_CHALLENGE = (program: string) => `pay:progchal:${program}`;

/** The payment relay as built: its services, peers' clients and (PAYMENT_PEERS=embedded) stand-ins. */
export type Payment = Awaited<ReturnType<typeof createPayment>>;

export async function createPayment(config: Config, deps: { store: Store; clock: Clock; bus: Bus; logger: Logger; programs?: ProgramsPort }) {
  let standins: PaymentStandins | undefined;
  let cfg = config;
  if (config.PAYMENT_PEERS === 'embedded') {
    const secret = config.BANKING_WEBHOOK_SECRET ?? newWebhookSecret();
    standins = await startPaymentStandins({ webhookSecret: secret });
    cfg = {
      ...config,
      BANKING_WEBHOOK_SECRET: secret,
      BANKING_URL: config.BANKING_URL ?? standins.banking.url,
      SSO_JWKS_URL: config.SSO_JWKS_URL ?? (config.SSO_PUBLIC_KEY ? undefined : `${standins.banking.url}/.well-known/jwks.json`),
      CHAIN_URL: config.CHAIN_URL ?? standins.chain.url,
      CHAIN_PUBLIC_KEY: config.CHAIN_PUBLIC_KEY ?? (config.CHAIN_URL ? undefined : standins.chain.state.publicKey),
      BROKER_URL: config.BROKER_URL ?? standins.broker.url,
      PRICE_PROVIDER_URLS: config.PRICE_PROVIDER_URLS ?? standins.prices.map((p) => p.url).join(','),
    };
    deps.logger.info({ banking: standins.banking.url, chain: standins.chain.url }, 'payment stand-ins started in-process');
  }
  const t = config.PEER_TIMEOUT_MS;
  const chain = cfg.CHAIN_URL ? new ChainClient(cfg.CHAIN_URL, t) : undefined;
  const treeHeads = chain && cfg.CHAIN_PUBLIC_KEY ? new TreeHeads(deps.store, chain, chainPublicKey(cfg.CHAIN_PUBLIC_KEY), deps.clock, deps.logger) : undefined;
  const providers = (cfg.PRICE_PROVIDER_URLS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const peg = new PegService(
    providers.map((u, i) => new PriceProviderClient(`provider${i + 1}`, u, cfg.PEG_TIMEOUT_MS)),
    { windowMs: cfg.PEG_WINDOW_MS, maxGapMs: cfg.PEG_MAX_GAP_MS, minProviders: 2 },
  );
  const idempotency = new Idempotency(deps.store, deps.clock, undefined, 'pay:idem');
  let kick: () => void = () => undefined;
  const service = new PaymentService({
    store: deps.store,
    clock: deps.clock,
    bus: deps.bus,
    peg,
    idempotency,
    bankingUrl: cfg.BANKING_URL,
    maxOnrampKrw: cfg.ONRAMP_MAX_KRW,
    onKick: () => kick(),
  });
  const lifecycle = new ChallengeLifecycle(service, {
    rules: { profitTarget: cfg.CHALLENGE_PROFIT_TARGET, dailyLoss: cfg.CHALLENGE_DAILY_LOSS, maxDrawdown: cfg.CHALLENGE_MAX_DRAWDOWN },
    violationDeductPercent: 10n,
  });
  const payouts = new PayoutService(service, {
    scalePpm: ppm(cfg.PAYOUT_SCALE_RATIO),
    disciplinePpm: ppm(cfg.PAYOUT_DISCIPLINE),
    breakerPercent: 5n,
    poolFactor: 2n,
    catchUpWeeks: cfg.PAYOUT_CATCHUP_WEEKS,
    leaseMs: 10 * 60_000,
  });
  const sso = new SsoVerifier({ jwksUrl: cfg.SSO_JWKS_URL, publicKeyPem: cfg.SSO_PUBLIC_KEY, issuer: cfg.SSO_ISSUER, audience: cfg.SSO_AUDIENCE, clock: deps.clock });
  const banking = cfg.BANKING_URL ? new BankingClient(cfg.BANKING_URL, t) : undefined;
  const reconciler = banking ? new Reconciler(service, banking, { periodMs: cfg.RECONCILE_PERIOD_MS, leaseMs: cfg.RECONCILE_LEASE_MS, logger: deps.logger }) : undefined;
  const deliverers: Record<string, Deliver> = paymentDeliverers(
    {
      chain,
      broker: cfg.BROKER_URL ? new BrokerClient(cfg.BROKER_URL, t) : undefined,
      banking,
    },
    (id, _kind, link) => service.onChainRecorded(id, link),
  );

  // a bought challenge runs as a live trading program bound to its account size
  let program: ChallengeProgramPort | undefined;
  let unbind: (() => void) | undefined;
  if (deps.programs) {
    const programs = deps.programs;
    program = {
      async start(c: ChallengeRecord) {
        const settings = settingsSchema.parse({ capital: c.account_size, daily_loss_limit: Math.round(c.account_size * cfg.CHALLENGE_DAILY_LOSS) });
        const p = await programs.create({ name: `challenge ${c.id}`, strategy: 'ema_cross', symbol: 'ES', params: {}, settings });
        await deps.store.set(PROGRAM_CHALLENGE(p.id), c.id);
        await programs.move(p.id, 'start');
        return p.id;
      },
    };
    unbind = deps.bus.onMessage(({ topic, message }) => {
      if (topic !== PROGRAM_EVENTS_TOPIC) return;
      const ev = programEvents.decode(message)!;
      const fill = ev.type === 'trade' && ev.kind === 'exit' && typeof ev.pnl === 'number';
      const violation = ev.type === 'status' && ev.state === 'stopped' && ev.reason === 'daily_loss_limit';
      if (!fill && !violation) return;
      void deps.store
        .get(PROGRAM_CHALLENGE(ev.program))
        .then((cid) => {
          if (typeof cid !== 'string') return;
          return fill
            ? lifecycle.event(cid, { type: 'fill', event_id: `p${ev.id}`, realized_cents: Math.round((ev as { pnl: number }).pnl * 100), ts: ev.t })
            : lifecycle.event(cid, { type: 'violation', event_id: `p${ev.id}`, rule: 'daily_loss', ts: ev.t });
        })
        .catch((err: unknown) => deps.logger.warn({ err }, 'challenge event not applied'));
    });
  }

  // the on-ramp's webhook and return addresses: configured, else this hub's own listening address
  // (never the request's Host header, which the caller chooses)
  let publicUrl = cfg.PUBLIC_URL?.replace(/\/+$/, '');
  return {
    publicUrl: () => publicUrl,
    postsPerMinute: cfg.PAYMENT_POSTS_PER_MINUTE,
    service,
    lifecycle,
    payouts,
    sso,
    chain,
    treeHeads,
    reconciler,
    settlement: banking ? new Settlement(deps.store, banking, () => deps.clock.now()) : undefined,
    bankingUrl: cfg.BANKING_URL,
    chainPublicKey: treeHeads ? rawPublicKey(chainPublicKey(cfg.CHAIN_PUBLIC_KEY!)) : undefined,
    program,
    deliverers,
    webhookSecret: cfg.BANKING_WEBHOOK_SECRET,
    standins,
    setKick(f: () => void) {
      kick = f;
    },
    start(listening?: { url: string }) {
      publicUrl ??= listening?.url || undefined;
      reconciler?.start();
      payouts.start((err) => deps.logger.warn({ err }, 'weekly payout run failed'));
    },
    async stop() {
      unbind?.();
      reconciler?.stop();
      payouts.stop();
      await standins?.close();
    },
  };
}
