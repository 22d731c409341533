import { readFileSync } from 'node:fs';
import { registerRewardRoutes } from './routes.js';
import { parseCharter } from './charter.js';
import { RewardService } from './service.js';
import { WorkSignatureGuard } from './signing.js';
import { rewardPeerDeliverers } from './peers.js';
import { defineService } from '../contract.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    reward: RewardService;
  }
}

/** The reward plan (docs/reward.md). */
export const rewardModule = defineService({
  name: 'reward',
  // credits reach the value service and the task ledger through the outbox, by its deliverers
  needs: ['outbox', 'deliverers'],
  provides: ['reward'],
  build(p, { outbox, deliverers }) {
    const { config, store, clock, bus } = p;
    deliverers.add(rewardPeerDeliverers(config));
    const service = new RewardService({
      store,
      clock,
      bus,
      charter: config.REWARD_CHARTER_FILE ? parseCharter(JSON.parse(readFileSync(config.REWARD_CHARTER_FILE, 'utf8'))) : undefined,
    });
    return {
      name: 'reward',
      ports: { reward: service },
      routes(hub) {
        registerRewardRoutes(hub, {
          service,
          outbox,
          signatures: config.REWARD_SIGNING === 'required' ? new WorkSignatureGuard(store, clock) : undefined,
        });
      },
    };
  },
});
