import { chatIntake, chatMail } from './intake-link.js';
import { REFERRAL_DEST, ReferralService } from './referral.js';
import { ChatService } from './service.js';
import { registerChatRoutes } from './routes.js';
import { defineService } from '../contract.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    chat: ChatService;
  }
}

/** The guided conversation with referrals and the shareholder view (docs/chat.md). */
export const chatModule = defineService({
  name: 'chat',
  // registers its receipts through the intake service and its applications as rental applications;
  // a referral's owner credit is carried by the outbox (referral.ts)
  needs: ['intake', 'rental', 'deliverers'],
  provides: ['chat'],
  build(p, { intake, rental, deliverers }) {
    const { config, store, clock, logger, bus } = p;
    const referrals = new ReferralService({ store, clock });
    deliverers.add({ [REFERRAL_DEST]: referrals.deliver });
    const link = chatIntake(intake, rental);
    const service = new ChatService({
      store,
      clock,
      intake: link,
      mail: chatMail(() => clock.now()),
      referrals,
      logger: logger.child({ part: 'chat' }),
      bus,
      sessionTtlMs: config.CHAT_SESSION_TTL * 1000,
      idleRestartMs: config.CHAT_IDLE_RESTART * 1000,
    });
    return {
      name: 'chat',
      ports: { chat: service },
      routes(hub) {
        registerChatRoutes(hub, {
          service,
          referrals,
          countReceipts: () => link.countReceipts(),
          now: () => clock.now(),
          limits: {
            sessionsPerHour: config.CHAT_SESSIONS_PER_CLIENT,
            turnsPerMinute: config.CHAT_TURNS_PER_MINUTE,
            lookupsPerMinute: config.CHAT_LOOKUPS_PER_MINUTE,
          },
        });
      },
    };
  },
});
