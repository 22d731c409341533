import type { Logger } from 'pino';
import type { Bus } from '../bus.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Deliver } from '../outbox.js';
import type { PaymentStandins } from './standins.js';
import type { Store } from '../store/port.js';
import type { LivePrograms } from '../trading/index.js';
import { Idempotency } from '../idempotency.js';
import { ChallengePrograms } from './challenge-programs.js';
import { ChallengeLifecycle } from './lifecycle.js';
import { PegService } from './peg.js';
import { BankingClient, BrokerClient, ChainClient, PriceProviderClient, paymentDeliverers } from './peers.js';
import { PayoutService } from './payouts.js';
import { ppm } from './rules.js';
import { PaymentService } from './service.js';
import { SsoVerifier } from './sso.js';
import { chainPublicKey, rawPublicKey } from './sth.js';
import { TreeHeads } from './tree-heads.js';
import { Reconciler } from './reconcile.js';
import { Corrections } from './corrections.js';
import { PaymentBooks } from './books.js';
import { Settlement } from './settlement.js';

/**
 * The payment relay's parts, built from its settings (src/payment/module.ts calls this with the
 * settings resolved, the embedded peers' addresses included when it runs them): the peers' clients,
 * SSO, peg, ledger services, the outbox deliverers, and the challenges' programs over the trading
 * service's `livePrograms` port (challenge-programs.ts). Building starts nothing: `start` starts the
 * reconciliation and the weekly payouts; the composition root follows the programs' events.
 */

/** The payment relay as built: its services, peers' clients and (PAYMENT_PEERS=embedded) stand-ins. */
export type Payment = ReturnType<typeof createPayment>;

export function createPayment(
  cfg: Config,
  deps: {
    store: Store;
    clock: Clock;
    bus: Bus;
    logger: Logger;
    /** Asks the outbox to deliver now (the `outbox` port's kick), after an effect enqueued to a peer. */
    kick?: () => void;
    programs?: LivePrograms;
    standins?: PaymentStandins;
  },
) {
  const t = cfg.PEER_TIMEOUT_MS;
  const chain = cfg.CHAIN_URL ? new ChainClient(cfg.CHAIN_URL, t) : undefined;
  const treeHeads = chain && cfg.CHAIN_PUBLIC_KEY ? new TreeHeads(deps.store, chain, chainPublicKey(cfg.CHAIN_PUBLIC_KEY), deps.clock, deps.logger, cfg.CHAIN_PINNED_HEAD) : undefined;
  const providers = (cfg.PRICE_PROVIDER_URLS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const peg = new PegService(
    providers.map((u, i) => new PriceProviderClient(`provider${i + 1}`, u, cfg.PEG_TIMEOUT_MS)),
    { windowMs: cfg.PEG_WINDOW_MS, maxGapMs: cfg.PEG_MAX_GAP_MS, minProviders: 2 },
  );
  const idempotency = new Idempotency(deps.store, deps.clock, undefined, 'pay:idem');
  const service = new PaymentService({
    store: deps.store,
    clock: deps.clock,
    bus: deps.bus,
    peg,
    idempotency,
    bankingUrl: cfg.BANKING_URL,
    maxOnrampKrw: cfg.ONRAMP_MAX_KRW,
    onKick: () => deps.kick?.(),
    onProgramStartFailed: (err, program) => deps.logger.warn({ err, program }, 'a challenge program did not start: it stays created for an operator to start'),
  });
  const lifecycle = new ChallengeLifecycle(service, deps.store, {
    rules: { profitTarget: cfg.CHALLENGE_PROFIT_TARGET, dailyLoss: cfg.CHALLENGE_DAILY_LOSS, maxDrawdown: cfg.CHALLENGE_MAX_DRAWDOWN },
    violationDeductPercent: 10n,
  });
  const payouts = new PayoutService(service, deps.store, {
    scalePpm: ppm(cfg.PAYOUT_SCALE_RATIO),
    disciplinePpm: ppm(cfg.PAYOUT_DISCIPLINE),
    breakerPercent: 5n,
    poolFactor: 2n,
    catchUpWeeks: cfg.PAYOUT_CATCHUP_WEEKS,
    leaseMs: 10 * 60_000,
  });
  const sso = new SsoVerifier({ jwksUrl: cfg.SSO_JWKS_URL, publicKeyPem: cfg.SSO_PUBLIC_KEY, issuer: cfg.SSO_ISSUER, audience: cfg.SSO_AUDIENCE, clock: deps.clock });
  const banking = cfg.BANKING_URL ? new BankingClient(cfg.BANKING_URL, t) : undefined;
  const reconciler = banking ? new Reconciler(service, deps.store, banking, { periodMs: cfg.RECONCILE_PERIOD_MS, leaseMs: cfg.RECONCILE_LEASE_MS, statusAfterMs: cfg.RECONCILE_STATUS_AFTER_MS, logger: deps.logger }) : undefined;
  // a bought challenge runs as a live trading program bound to its account size
  const program = deps.programs
    ? new ChallengePrograms({ store: deps.store, programs: deps.programs, lifecycle, dailyLoss: cfg.CHALLENGE_DAILY_LOSS, logger: deps.logger })
    : undefined;

  const deliverers: Record<string, Deliver> = paymentDeliverers(
    {
      chain,
      broker: cfg.BROKER_URL ? new BrokerClient(cfg.BROKER_URL, t) : undefined,
      banking,
    },
    (id, _kind, link) => service.onChainRecorded(id, link),
  );
  // the outbox creates and starts a bought challenge's program in its own partition
  if (program) Object.assign(deliverers, program.deliverers());

  // the on-ramp's webhook and return addresses: configured, else this hub's own listening address
  // (never the request's Host header, which the caller chooses)
  let publicUrl = cfg.PUBLIC_URL?.replace(/\/+$/, '');
  return {
    publicUrl: () => publicUrl,
    postsPerMinute: cfg.PAYMENT_POSTS_PER_MINUTE,
    service,
    lifecycle,
    payouts,
    corrections: new Corrections(service, deps.store),
    books: new PaymentBooks(deps.store),
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
    standins: deps.standins,
    start(listening?: { url: string }) {
      publicUrl ??= listening?.url || undefined;
      reconciler?.start();
      treeHeads?.watch(cfg.CHAIN_WATCH_MS);
      payouts.start((err) => deps.logger.warn({ err }, 'weekly payout run failed'));
      // on a shared store, compete for the ledger's writer lease (ledger-writer.ts)
      service.ledger.onLease = (held) => deps.logger.info({ ledger_writer: service.ledger.token, held }, held ? 'this process applies the ledger (writer lease taken)' : 'the ledger writer lease went to another process');
      service.ledger.start().catch((err: unknown) => deps.logger.warn({ err }, 'the ledger writer did not start: this process applies its own ledger steps'));
    },
    async stop() {
      reconciler?.stop();
      treeHeads?.stopWatch();
      payouts.stop();
      await service.ledger.stop();
    },
  };
}
