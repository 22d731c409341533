import { registerPaymentRoutes } from '../http/payment.js';
import { registerSettlementRoutes } from '../http/payment-settlement.js';
import { registerPaymentChainRoutes } from '../http/payment-chain.js';
import { createPayment } from '../payment/wire.js';
import { defineService } from './compose.js';

/** The token payment relay (docs/payment.md): its peers' deliverers join the outbox, kicked when it enqueues. */
export const paymentModule = defineService({
  name: 'payment',
  // a bought challenge runs as a live trading program
  needs: ['programs', 'outbox', 'deliverers'],
  provides: ['payment'],
  async build(p, { programs, outbox, deliverers }) {
    const { config } = p;
    // DEMO=1 without a configured bank runs the payment peers' stand-ins in-process, so the demo
    // wallet works; a plain start never does (PAYMENT_PEERS=embedded is the only other way to get them)
    const demoPeers = config.DEMO && config.PAYMENT_PEERS === 'off' && !config.BANKING_URL;
    const payment = await createPayment(demoPeers ? { ...config, PAYMENT_PEERS: 'embedded' } : config, {
      store: p.store,
      clock: p.clock,
      bus: p.bus,
      logger: p.logger.child({ part: 'payment' }),
      programs,
    });
    deliverers.add(payment.deliverers);
    payment.setKick(() => outbox.kick());
    return {
      name: 'payment',
      ports: { payment },
      routes: (hub) => {
        registerPaymentRoutes(hub, payment);
        registerSettlementRoutes(hub, payment);
        registerPaymentChainRoutes(hub, payment);
      },
      start: (listening) => payment.start(listening),
      stop: () => payment.stop(),
    };
  },
});
