import { AuthService, SUPER_ROLE } from './service.js';
import { registerAuthRoutes } from './routes.js';
import { defineService } from '../compose/compose.js';

/** Accounts, tokens, scanner devices and the partner login (docs/auth.md). */
export const authModule = defineService({
  name: 'auth',
  // partner sign-in attempts go to the partner audit, beside the partners' review actions
  needs: ['partnerAudit'],
  provides: ['auth'],
  async build(p, { partnerAudit }) {
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
    return {
      name: 'auth',
      ports: { auth: service },
      routes(hub) {
        hub.authenticate((token) => service.authenticate(token), { superRole: SUPER_ROLE });
        registerAuthRoutes(hub, {
          service,
          onPartnerAttempt: ({ action, client, result }) =>
            partnerAudit.record({ actor: result === 'ok' ? 'partner' : '-', client, action, target: null, result, detail: null }),
        });
        hub.page('/accounts', '/accounts.html', { title: 'Accounts', description: 'Operators manage accounts, roles and scanner device tokens' });
      },
    };
  },
});
