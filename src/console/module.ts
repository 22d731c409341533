import { defineService } from '../compose/compose.js';
import { registerConsoleRoutes } from './routes.js';
import { ConsoleService } from './service.js';

/** The operator console: every hub process's live state and the operator's actions (docs/console.md). */
export const consoleModule = defineService({
  name: 'console',
  needs: ['auth', 'outbox', 'tradingJobs'],
  provides: [],
  build(p, { auth, outbox, tradingJobs }) {
    const service = new ConsoleService({
      store: p.store,
      clock: p.clock,
      logger: p.logger.child({ part: 'console' }),
      processId: p.processId,
      nodeEveryMs: p.config.CONSOLE_NODE_MS,
      auth,
      outbox,
      tradingJobs,
    });
    return {
      name: 'console',
      ports: {},
      routes(hub) {
        service.attach(hub);
        registerConsoleRoutes(hub, { service, liveEveryMs: p.config.CONSOLE_LIVE_MS });
        hub.page('/console', '/console.html', {
          title: 'Console',
          description: 'Operators see every hub process live (nodes, topics, queues, the store), look up the connections of an identity and disconnect them',
        });
      },
      start: () => service.start(),
      stop: () => service.stop(),
    };
  },
});
