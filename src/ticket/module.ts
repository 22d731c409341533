import { registerTicketRoutes } from './routes.js';
import { TicketService } from './service.js';
import { defineService } from '../contract.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    tickets: TicketService;
  }
}

/** Mobile ticketing and check-in (docs/ticket.md). */
export const ticketModule = defineService({
  name: 'ticket',
  needs: [],
  provides: ['tickets'],
  build(p) {
    const { store, clock, bus } = p;
    const service = new TicketService({ store, clock, bus });
    return {
      name: 'ticket',
      ports: { tickets: service },
      routes(hub) {
        registerTicketRoutes(hub, { service });
      },
    };
  },
});
