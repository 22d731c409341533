import { defineService } from '../contract.js';
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
          description: '운영자가 허브의 모든 프로세스(노드, 토픽, 큐, 저장소)를 실시간으로 보고, 한 사용자의 연결을 찾아 끊습니다',
        });
      },
      start: () => service.start(),
      stop: () => service.stop(),
    };
  },
});
