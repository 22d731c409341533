import { defineService } from '../contract.js';
import { registerCoachRoutes } from './routes.js';
import { CoachService } from './service.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    coach: CoachService;
  }
}

/** Coaching cards, visions and actions per owner (docs/coach.md). */
export const coachModule = defineService({
  name: 'coach',
  needs: [],
  provides: ['coach'],
  build(p) {
    const { config, store, clock } = p;
    const service = new CoachService({ store, clock });
    return {
      name: 'coach',
      ports: { coach: service },
      routes(hub) {
        registerCoachRoutes(hub, { service, ownerSecret: config.COACH_OWNER_SECRET, callsPerMinute: config.COACH_CALLS_PER_MINUTE });
      },
    };
  },
});
