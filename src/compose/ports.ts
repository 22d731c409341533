import type { AuthService } from '../auth/service.js';
import type { BlobStore } from '../blobs/index.js';
import type { ChatService } from '../chat/service.js';
import type { CoachService } from '../coach/service.js';
import type { CollabService } from '../collab/service.js';
import type { DemoSummary } from '../demo/seed.js';
import type { IntakeService } from '../intake/service.js';
import type { Mailer } from '../mail/mailer.js';
import type { Deliver, Outbox } from '../outbox.js';
import type { Payment } from '../payment/relay.js';
import type { PartnerAudit } from '../rental/audit.js';
import type { RentalService } from '../rental/service.js';
import type { RewardService } from '../reward/service.js';
import type { TicketService } from '../ticket/service.js';
import type { LivePrograms } from '../trading/program-port.js';
import type { ProgramService } from '../trading/programs.js';
import type { Jobs } from '../trading/jobs.js';

/**
 * Every port one service offers the others, by name. A service definition (src/<service>/module.ts) says
 * which of these it provides and which it needs; src/compose/compose.ts finds the providers and the
 * order. Only these cross from one service to another.
 */
export interface Ports {
  /** The durable outbox (enqueue is done in a service's own store update; kick asks for delivery now). */
  outbox: Outbox;
  /** Adds the deliverers of a service's outbox destinations before the outbox starts. */
  deliverers: { add(deliverers: Record<string, Deliver>): void };
  mailer: Mailer;
  intake: IntakeService;
  rental: RentalService;
  partnerAudit: PartnerAudit;
  rentalFiles: BlobStore;
  auth: AuthService;
  tickets: TicketService;
  reward: RewardService;
  programs: ProgramService;
  /** Live programs another service runs as its own (the payment relay's challenges; src/trading/program-port.ts). */
  livePrograms: LivePrograms;
  /** This process's trading job queue (admitted, running, waiting, the bounds), for the operator console. */
  tradingJobs: Pick<Jobs, 'stats'>;
  collab: CollabService;
  chat: ChatService;
  coach: CoachService;
  payment: Payment;
  /** DEMO=1 only: what the demo seeded (the start banner prints it). */
  demo: DemoSummary;
}
