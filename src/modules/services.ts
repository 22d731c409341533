import { authModule } from './auth.js';
import { chatModule, coachModule } from './chat.js';
import { collabModule } from './collab.js';
import type { ServiceDefinition } from './compose.js';
import { demoModule } from './demo.js';
import { outboxModule } from './outbox.js';
import { paymentModule } from './payment.js';
import { rentalModule } from './rental.js';
import { rewardModule } from './reward.js';
import { ticketModule } from './ticket.js';
import { tradingModule } from './trading.js';

/**
 * The services this hub runs. Their order here is only the tie-break: src/modules/compose.ts builds
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
  demoModule,
];
