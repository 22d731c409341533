import { chatIntake, chatMail } from '../chat/intake-link.js';
import { ReferralService } from '../chat/referral.js';
import { ChatService } from '../chat/service.js';
import { CoachService } from '../coach/service.js';
import { registerChatRoutes } from '../http/chat.js';
import { registerCoachRoutes } from '../http/coach.js';
import type { IntakeService } from '../intake/service.js';
import type { RentalService } from '../rental/service.js';
import type { Platform, ServiceModule } from './module.js';

/** The guided conversation with referrals and the shareholder view (docs/chat.md). */
export function chatModule(p: Platform, deps: { intake: IntakeService; rental: RentalService }): ServiceModule {
  const { config, store, clock, logger } = p;
  // registers its receipts through the intake service, mail through the outbox
  const referrals = new ReferralService({ store, clock });
  const link = chatIntake(deps.intake, store, deps.rental);
  const service = new ChatService({
    store,
    clock,
    intake: link,
    mail: chatMail(() => clock.now()),
    referrals,
    logger: logger.child({ part: 'chat' }),
    sessionTtlMs: config.CHAT_SESSION_TTL * 1000,
    idleRestartMs: config.CHAT_IDLE_RESTART * 1000,
  });
  return {
    name: 'chat',
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
}

/** Coaching cards, visions and actions per owner (docs/coach.md). */
export function coachModule(p: Platform): ServiceModule {
  const { config, store, clock } = p;
  const service = new CoachService({ store, clock });
  return {
    name: 'coach',
    routes(hub) {
      registerCoachRoutes(hub, { service, ownerSecret: config.COACH_OWNER_SECRET, callsPerMinute: config.COACH_CALLS_PER_MINUTE });
    },
  };
}
