import { defineService } from '../../../src/contract.js';
import { registerNinthRoutes } from './routes.js';

/** A ninth service, written as one folder: it needs the outbox by name and provides nothing. */
export const ninthModule = defineService({
  name: 'ninth',
  needs: ['outbox'],
  provides: [],
  build(p, { outbox }) {
    return {
      name: 'ninth',
      ports: {},
      routes(hub) {
        registerNinthRoutes(hub, { bus: p.bus, outboxReady: outbox !== undefined });
      },
    };
  },
});
