import { AuthService, SUPER_ROLE } from './service.js';
import { registerAuthRoutes } from './routes.js';
import { SignInEvents } from './sign-ins.js';
import { defineService } from '../contract.js';
import type { SignIns } from './sign-ins.js';

/** The ports this service offers the others (src/contract.ts). */
declare module '../contract.js' {
  interface Ports {
    auth: AuthService;
    /** Every sign-in and sign-out attempt (identity tells; rental audits its partner's). */
    signIns: SignIns;
  }
}

/** Accounts, tokens, scanner devices and the one sign-in for every account kind (docs/auth.md). */
export const authModule = defineService({
  name: 'auth',
  needs: [],
  // signIns: every sign-in and sign-out attempt, for the services that follow them (rental audits its partner's)
  provides: ['auth', 'signIns'],
  async build(p) {
    const { config, store, clock, logger } = p;
    const service = new AuthService({
      store,
      clock,
      logger: logger.child({ part: 'auth' }),
      tokenTtlMs: config.AUTH_TOKEN_TTL_MS,
      partnerTokenTtlMs: config.PARTNER_TOKEN_TTL,
      deviceTokenTtlMs: config.DEVICE_TOKEN_TTL_MS,
    });
    await service.bootstrap({ admin: config.ADMIN_PASSWORD, partner: config.PARTNER_PASSWORD });
    const signIns = new SignInEvents(logger.child({ part: 'auth' }));
    return {
      name: 'auth',
      ports: { auth: service, signIns },
      routes(hub) {
        hub.authenticate((token) => service.authenticate(token), { superRole: SUPER_ROLE });
        registerAuthRoutes(hub, { service, signIns });
        hub.page('/accounts', '/accounts.html', { title: 'Accounts', description: '운영자가 계정과 역할, 입장 스캐너 기기 토큰을 관리합니다' });
      },
    };
  },
});
