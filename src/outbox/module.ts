import { Mailer, MAIL_DEST } from '../mail/index.js';
import { Outbox } from '../outbox.js';
import { defineService } from '../contract.js';
import type { Deliver } from '../outbox.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    /** The durable outbox (enqueue is done in a service's own store update; kick asks for delivery now). */
    outbox: Outbox;
    /** Adds the deliverers of a service's outbox destinations before the outbox starts. */
    deliverers: { add(deliverers: Record<string, Deliver>): void };
    mailer: Mailer;
  }
}

/**
 * The durable outbox and the mailer that delivers through it. Every other service adds the
 * deliverers of its destinations through the `deliverers` port while it is built, before the outbox
 * starts (reward: the value service and the task ledger; payment: the chain, the broker, the bank),
 * and asks for delivery now with the `outbox` port's kick.
 */
export const outboxModule = defineService({
  name: 'outbox',
  needs: [],
  provides: ['outbox', 'deliverers', 'mailer'],
  build(p) {
    const { config, store, clock, logger } = p;
    const mailer = new Mailer({ store, clock, smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
    const outbox = new Outbox({
      store,
      clock,
      deliver: { [MAIL_DEST]: mailer.deliver },
      retryMinMs: config.OUTBOX_RETRY_MIN_MS,
      retryMaxMs: config.OUTBOX_RETRY_MAX_MS,
      logger: logger.child({ part: 'outbox' }),
    });
    return {
      name: 'outbox',
      ports: { outbox, mailer, deliverers: { add: (more) => outbox.addDeliverers(more) } },
      routes(hub) {
        hub.ready('outbox', () => outbox.readiness());
      },
      start: () => outbox.start(),
      close: async () => {
        await outbox.stop();
        mailer.close();
      },
    };
  },
});
