import { authModule } from '../auth/module.js';
import { chatModule } from '../chat/module.js';
import { coachModule } from '../coach/module.js';
import { collabModule } from '../collab/module.js';
import { consoleModule } from '../console/module.js';
import type { ServiceDefinition } from '../contract.js';
import { demoModule } from '../demo/module.js';
import { outboxModule } from '../outbox/module.js';
import { paymentModule } from '../payment/module.js';
import { rentalModule } from '../rental/module.js';
import { rewardModule } from '../reward/module.js';
import { ticketModule } from '../ticket/module.js';
import { tradingModule } from '../trading/module.js';

/**
 * The services this hub runs. Their order here is only the tie-break: src/compose/compose.ts builds
 * each after the providers of the ports it needs, and refuses a cycle or a port nobody provides.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const SERVICES: readonly ServiceDefinition<any, any>[] = [
  outboxModule,
  authModule,
  rentalModule,
  rewardModule,
  ticketModule,
  chatModule,
  coachModule,
  tradingModule,
  paymentModule,
  collabModule,
  consoleModule,
  demoModule,
];
