import { readFileSync } from 'node:fs';
import { registerRewardRoutes } from '../http/reward.js';
import type { Outbox } from '../outbox.js';
import { parseCharter } from '../reward/charter.js';
import { RewardService } from '../reward/service.js';
import { WorkSignatureGuard } from '../reward/signing.js';
import type { Platform, ServiceModule } from './module.js';

/** The reward plan (docs/reward.md). */
export function rewardModule(p: Platform, deps: { outbox: Outbox }): ServiceModule & { service: RewardService } {
  const { config, store, clock, bus } = p;
  const service = new RewardService({
    store,
    clock,
    bus,
    charter: config.REWARD_CHARTER_FILE ? parseCharter(JSON.parse(readFileSync(config.REWARD_CHARTER_FILE, 'utf8'))) : undefined,
  });
  return {
    name: 'reward',
    service,
    routes(hub) {
      registerRewardRoutes(hub, {
        service,
        outbox: deps.outbox,
        signatures: config.REWARD_SIGNING === 'required' ? new WorkSignatureGuard(store, clock) : undefined,
      });
    },
  };
}
