import { registerPaymentRoutes } from '../http/payment.js';
import type { Deliver } from '../outbox.js';
import { createPayment, type ProgramsPort } from '../payment/wire.js';
import type { Platform, ServiceModule } from './module.js';

/** The token payment relay (docs/payment.md): its peers' deliverers join the outbox, kicked when it enqueues. */
export async function paymentModule(
  p: Platform,
  deps: { programs: ProgramsPort; deliver: Record<string, Deliver>; kick: () => void },
): Promise<ServiceModule> {
  const payment = await createPayment(p.config, { store: p.store, clock: p.clock, bus: p.bus, logger: p.logger.child({ part: 'payment' }), programs: deps.programs });
  Object.assign(deps.deliver, payment.deliverers);
  payment.setKick(deps.kick);
  return {
    name: 'payment',
    routes: (hub) => registerPaymentRoutes(hub, payment),
    start: (listening) => payment.start(listening),
    stop: () => payment.stop(),
  };
}
