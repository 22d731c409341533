import { chatIntake, chatMail } from './intake-link.js';
import { ReferralService } from './referral.js';
import { ChatService } from './service.js';
import { registerChatRoutes } from './routes.js';
import { defineService } from '../compose/compose.js';

/** The guided conversation with referrals and the shareholder view (docs/chat.md). */
export const chatModule = defineService({
  name: 'chat',
  // registers its receipts through the intake service and its applications as rental applications
  needs: ['intake', 'rental'],
  provides: ['chat'],
  build(p, { intake, rental }) {
    const { config, store, clock, logger, bus } = p;
    const referrals = new ReferralService({ store, clock });
    const link = chatIntake(intake, store, rental);
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
