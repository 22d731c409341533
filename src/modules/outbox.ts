import { Mailer, MAIL_DEST } from '../mail/mailer.js';
import { Outbox, type Deliver } from '../outbox.js';
import { rewardPeerDeliverers } from '../reward/peers.js';
import type { Platform, ServiceModule } from './module.js';

/**
 * The durable outbox and the mailer that delivers through it. Its deliverers are a map other
 * modules add to (the payment relay's peers) before it starts.
 */
export function outboxModule(p: Platform): ServiceModule & { outbox: Outbox; mailer: Mailer; deliver: Record<string, Deliver> } {
  const { config, store, clock, logger } = p;
  const mailer = new Mailer({ store, clock, smtpUrl: config.SMTP_URL, from: config.MAIL_FROM });
  const deliver: Record<string, Deliver> = { ...rewardPeerDeliverers(config), [MAIL_DEST]: mailer.deliver };
  const outbox = new Outbox({
    store,
    clock,
    deliver,
    retryMinMs: config.OUTBOX_RETRY_MIN_MS,
    retryMaxMs: config.OUTBOX_RETRY_MAX_MS,
    logger: logger.child({ part: 'outbox' }),
  });
  return {
    name: 'outbox',
    outbox,
    mailer,
    deliver,
    routes(hub) {
      hub.ready('outbox', () => outbox.readiness());
    },
    start: () => outbox.start(),
    close: async () => {
      await outbox.stop();
      mailer.close();
    },
  };
}
