import { registerTicketRoutes } from '../http/ticket.js';
import { TicketService } from '../ticket/service.js';
import type { Platform, ServiceModule } from './module.js';

/** Mobile ticketing and check-in (docs/ticket.md). */
export function ticketModule(p: Platform): ServiceModule & { service: TicketService } {
  const { store, clock, bus } = p;
  const service = new TicketService({ store, clock, bus });
  return {
    name: 'ticket',
    service,
    routes(hub) {
      registerTicketRoutes(hub, { service });
    },
  };
}
