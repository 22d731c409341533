import { AuthService, SUPER_ROLE } from '../auth/service.js';
import { registerAuthRoutes } from '../http/auth.js';
import type { PartnerAudit } from '../rental/audit.js';
import type { Platform, ServiceModule } from './module.js';

/** Accounts, tokens, scanner devices and the partner login (docs/auth.md). */
export async function authModule(p: Platform, deps: { partnerAudit: PartnerAudit }): Promise<ServiceModule & { service: AuthService }> {
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
    service,
    routes(hub) {
      hub.authenticate((token) => service.authenticate(token), { superRole: SUPER_ROLE });
      registerAuthRoutes(hub, {
        service,
        onPartnerAttempt: ({ action, client, result }) =>
          deps.partnerAudit.record({ actor: result === 'ok' ? 'partner' : '-', client, action, target: null, result, detail: null }),
      });
      hub.page('/accounts', '/accounts.html', { title: 'Accounts', description: 'Operators manage accounts, roles and scanner device tokens' });
    },
  };
}
