import type { AuthService } from '../auth/service.js';
import type { CollabService } from '../collab/service.js';
import { registerDemo, seedDemo, type DemoSummary } from '../demo.js';
import type { RewardService } from '../reward/service.js';
import type { TicketService } from '../ticket/service.js';
import type { ProgramService } from '../trading/programs.js';
import type { Platform, ServiceModule } from './module.js';

/**
 * DEMO=1 only: the demo data, seeded through the services once they run (the programs' market
 * included), the /demo page and GET /api/demo (src/demo.ts).
 */
export function demoModule(
  p: Platform,
  parts: { auth: AuthService; tickets: TicketService; reward: RewardService; collab: CollabService; programs: ProgramService },
): ServiceModule & { summary: DemoSummary } {
  // filled at start; the demo routes read it when asked
  const summary = {} as DemoSummary;
  return {
    name: 'demo',
    summary,
    routes: (hub) => registerDemo(hub, summary),
    async start() {
      Object.assign(summary, await seedDemo({ store: p.store, ...parts }));
    },
  };
}
