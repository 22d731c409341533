import { Mailer, MAIL_DEST } from '../mail/index.js';
import { Outbox } from '../outbox.js';
import { rewardPeerDeliverers } from '../reward/index.js';
import { defineService } from '../compose/compose.js';

/**
 * The durable outbox and the mailer that delivers through it. Other services add the deliverers of
 * their destinations through the `deliverers` port while they are built, before the outbox starts.
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
      deliver: { ...rewardPeerDeliverers(config), [MAIL_DEST]: mailer.deliver },
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
