import { z } from 'zod';
import { ROLES, USER_RE, type AuthService } from './service.js';
import { MAX_PASSWORD, MIN_PASSWORD } from './passwords.js';
import { Reply, type Hub, type RequestContext } from '../hub/declare.js';
import { label } from '../text.js';

/**
 * Routes of the identity model (docs/auth.md): login and logout for every account, the rental
 * partner's login at the document's path, account management for operators, and scanner device
 * tokens for staff.
 */

const user = z.string().regex(USER_RE, 'a user name is 2-32 of a-z 0-9 . _ - (starting with a letter or digit)');
const password = z.string().min(1, 'must not be empty').max(MAX_PASSWORD);
const newPassword = z.string().min(MIN_PASSWORD, `must be at least ${MIN_PASSWORD} characters`).max(MAX_PASSWORD);
const roles = z.array(z.enum(ROLES)).min(1).max(ROLES.length);

// answers (docs/auth.md), published in /openapi.json and checked by the contract tests
const roleList = z.array(z.string());
const identity = z.object({ id: z.string(), name: z.string(), roles: roleList, kind: z.enum(['account', 'device']), gate: z.string().optional() });
const issued = z.object({ token: z.string(), hash: z.string().describe('SHA-256 of the token'), expiresAt: z.string(), roles: roleList, user: z.string(), name: z.string() });
const account = z.object({ user: z.string(), name: z.string(), roles: roleList, disabled: z.boolean(), createdAt: z.string() });
const device = z.object({ id: z.string(), gate: z.string(), name: z.string(), issuedBy: z.string(), createdAt: z.string(), expiresAt: z.string() });
const ok = z.object({ ok: z.literal(true) });

/** The token the caller presented (the route's auth already accepted it). */
const tokenOf = (ctx: RequestContext) => ctx.token!;

/** A partner login or logout as the partner's audit trail records it (src/rental/audit.ts). */
export interface PartnerAttempt {
  action: 'login' | 'logout';
  client: string;
  /** `ok`, or the refusal's code (`invalid_credentials`, `too_many_attempts`, ...). */
  result: string;
}

export function registerAuthRoutes(
  hub: Hub,
  opts: { service: AuthService; onPartnerAttempt?: (attempt: PartnerAttempt) => Promise<void> },
): void {
  const { service } = opts;
  /** Runs a partner action and reports it, whatever the outcome; a failing report changes nothing. */
  const reported = async <T>(action: PartnerAttempt['action'], client: string, f: () => Promise<T>): Promise<T> => {
    let result = 'ok';
    try {
      return await f();
    } catch (err) {
      result = err instanceof Error && 'code' in err ? String((err as { code: unknown }).code) : 'error';
      throw err;
    } finally {
      await opts.onPartnerAttempt?.({ action, client, result }).catch(() => undefined);
    }
  };

  hub.route({
    method: 'POST',
    path: '/api/auth/login',
    body: { schema: z.strictObject({ user: z.string().max(64), password }) },
    response: issued,
    handler: (ctx) => service.login(ctx.body.user, ctx.body.password, ctx.remoteAddress),
  });
  hub.route({
    method: 'POST',
    path: '/api/auth/logout',
    auth: {},
    response: ok,
    handler: async (ctx) => {
      await service.logout(tokenOf(ctx), ctx.identity!.id);
      return { ok: true };
    },
  });
  hub.route({ method: 'GET', path: '/api/auth/me', auth: {}, response: z.object({ identity }), cacheControl: 'no-store', handler: (ctx) => ({ identity: ctx.identity }) });

  // the rental partner (doc 1, Authentication): one more login of the same model, account "partner"
  hub.route({
    method: 'POST',
    path: '/api/partner/login',
    body: { schema: z.strictObject({ password }) },
    response: z.object({ token: z.string(), expiresAt: z.string() }),
    handler: async (ctx) => {
      const client = ctx.remoteAddress;
      const out = await reported('login', client, () => service.login('partner', ctx.body.password, client));
      return { token: out.token, expiresAt: out.expiresAt };
    },
  });
  hub.route({
    method: 'POST',
    path: '/api/partner/logout',
    auth: { roles: ['partner'] },
    response: ok,
    handler: async (ctx) => {
      await reported('logout', ctx.remoteAddress, () => service.logout(tokenOf(ctx), ctx.identity!.id));
      return { ok: true };
    },
  });

  const operator = { roles: ['operator'] } as const;
  hub.route({ method: 'GET', path: '/api/auth/accounts', auth: operator, response: z.object({ accounts: z.array(account) }), cacheControl: 'no-store', handler: async () => ({ accounts: await service.accounts() }) });
  hub.route({
    method: 'POST',
    path: '/api/auth/accounts',
    auth: operator,
    body: { schema: z.strictObject({ user, password: newPassword, roles, name: label(60).optional() }) },
    response: { 201: account },
    handler: async (ctx) => Reply.json(await service.createAccount(ctx.body), 201),
  });
  hub.route({
    method: 'PUT',
    path: '/api/auth/accounts/:user',
    auth: operator,
    params: z.object({ user }),
    body: {
      schema: z
        .strictObject({ password: newPassword.optional(), roles: roles.optional(), name: label(60).optional(), disabled: z.boolean().optional() })
        .refine((b) => Object.keys(b).length > 0, 'name at least one of password, roles, name, disabled'),
    },
    response: account,
    handler: (ctx) => service.updateAccount(ctx.params.user, ctx.body),
  });

  const staff = { roles: ['staff'] } as const;
  hub.route({
    method: 'POST',
    path: '/api/auth/devices',
    auth: staff,
    body: { schema: z.strictObject({ gate: label(64), name: label(64) }) },
    response: { 201: z.object({ token: z.string(), device }) },
    handler: async (ctx) => Reply.json(await service.issueDevice(ctx.body, ctx.identity!.id), 201),
  });
  hub.route({ method: 'GET', path: '/api/auth/devices', auth: staff, response: z.object({ devices: z.array(device) }), cacheControl: 'no-store', handler: async () => ({ devices: await service.devices() }) });
  hub.route({
    method: 'DELETE',
    path: '/api/auth/devices/:id',
    auth: staff,
    params: z.object({ id: z.string().regex(/^d_[0-9a-f]{12}$/, 'must be a device id (d_ and 12 hex digits)') }),
    response: z.object({ revoked: z.literal(true), id: z.string() }),
    handler: (ctx) => service.revokeDevice(ctx.params.id),
  });
}

