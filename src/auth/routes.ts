import { z } from 'zod';
import { PARTNER_USER, ROLES, USER_RE, type AuthService } from './service.js';
import type { SignInAttempt, SignInEvents } from './sign-ins.js';
import { MAX_PASSWORD, MIN_PASSWORD } from './passwords.js';
import { route, Reply, type Hub, type RequestContext } from '../hub/declare.js';
import { label } from '../text.js';

/**
 * Routes of the identity model (docs/auth.md): one sign-in and one sign-out for every account kind
 * (the rental partner's at the document's path, POST /api/partner/login, is the same handler),
 * account management for operators, and scanner device tokens for staff.
 */

const user = z.string().regex(USER_RE, 'a user name is 2-32 of a-z 0-9 . _ - (starting with a letter or digit)');
const password = z.string().min(1, 'must not be empty').max(MAX_PASSWORD);
const newPassword = z.string().min(MIN_PASSWORD, `must be at least ${MIN_PASSWORD} characters`).max(MAX_PASSWORD);
const roles = z.array(z.enum(ROLES)).min(1).max(ROLES.length);

// answers (docs/auth.md), published in /openapi.json and checked by the contract tests
const roleList = z.array(z.string());
const identity = z.object({ id: z.string(), name: z.string(), roles: roleList, kind: z.enum(['account', 'device']), gate: z.string().optional() });
const issued = z.object({ token: z.string(), hash: z.string().describe('SHA-256 of the token'), expiresAt: z.string(), roles: roleList, user: z.string(), name: z.string() });
const account = z.object({ user: z.string(), name: z.string(), roles: roleList, disabled: z.boolean(), createdAt: z.string(), email: z.string().optional() });
/** Where an account is told things by mail (a mention in a document comment). */
const email = z.email().max(254);
const device = z.object({ id: z.string(), gate: z.string(), name: z.string(), issuedBy: z.string(), createdAt: z.string(), expiresAt: z.string() });
const ok = z.object({ ok: z.literal(true) });

/** The token the caller presented (the route's auth already accepted it). */
const tokenOf = (ctx: RequestContext) => ctx.token!;

/** The routes of this file as data (hub.mount): their types are what the pages' client reads (web/common/api.ts). */
export type AuthRoutes = ReturnType<typeof registerAuthRoutes>;

export function registerAuthRoutes(hub: Hub, opts: { service: AuthService; signIns: SignInEvents }) {
  const { service, signIns } = opts;
  /** Runs a sign-in or sign-out and tells the listeners, whatever the outcome. */
  const reported = async <T>(attempt: Omit<SignInAttempt, 'result' | 'roles'>, roles: (out: T) => readonly string[] | undefined, f: () => Promise<T>): Promise<T> => {
    let result = 'ok';
    let known: readonly string[] | undefined;
    try {
      const out = await f();
      known = roles(out);
      return out;
    } catch (err) {
      result = err instanceof Error && 'code' in err ? String((err as { code: unknown }).code) : 'error';
      throw err;
    } finally {
      await signIns.emit({ ...attempt, roles: known, result });
    }
  };

  /** The one sign-in, for every account kind. */
  const signIn = (ctx: RequestContext & { body: { user: string; password: string } }) =>
    reported({ action: 'login', user: ctx.body.user, client: ctx.remoteAddress }, (out) => out.roles, () => service.login(ctx.body.user, ctx.body.password, ctx.remoteAddress));
  /** The one sign-out: revokes the presented token. */
  const signOut = async (ctx: RequestContext) => {
    const identity = ctx.identity!;
    await reported({ action: 'logout', user: identity.id, client: ctx.remoteAddress }, () => identity.roles, () => service.logout(tokenOf(ctx), identity.id));
    return { ok: true as const };
  };

  const postAuthLogin = route({
    method: 'POST',
    path: '/auth/login',
    body: { schema: z.strictObject({ user: z.string().max(64), password }) },
    response: issued,
    handler: signIn,
  });
  const postAuthLogout = route({ method: 'POST', path: '/auth/logout', auth: {}, response: ok, handler: signOut });
  const getAuthMe = route({ method: 'GET', path: '/auth/me', auth: {}, response: z.object({ identity }), cacheControl: 'no-store', handler: (ctx) => ({ identity: ctx.identity }) });

  // the rental partner (doc 1, Authentication): the document's path of the same sign-in, for the
  // account "partner" (its body carries the password only; its answer, the token and its expiry)
  const postPartnerLogin = route({
    method: 'POST',
    path: '/partner/login',
    body: { schema: z.strictObject({ password }).transform((b) => ({ user: PARTNER_USER, password: b.password })) },
    response: z.object({ token: z.string(), expiresAt: z.string() }),
    handler: async (ctx) => {
      const { token, expiresAt } = await signIn(ctx);
      return { token, expiresAt };
    },
  });
  const postPartnerLogout = route({ method: 'POST', path: '/partner/logout', auth: { roles: ['partner'] }, response: ok, handler: signOut });

  const operator = { roles: ['operator'] } as const;
  const getAuthAccounts = route({ method: 'GET', path: '/auth/accounts', auth: operator, response: z.object({ accounts: z.array(account) }), cacheControl: 'no-store', handler: async () => ({ accounts: await service.accounts() }) });
  const postAuthAccounts = route({
    method: 'POST',
    path: '/auth/accounts',
    auth: operator,
    body: { schema: z.strictObject({ user, password: newPassword, roles, name: label(60).optional(), email: email.optional() }) },
    response: { 201: account },
    handler: async (ctx) => Reply.json(await service.createAccount(ctx.body), 201),
  });
  const putAuthAccountsByUser = route({
    method: 'PUT',
    path: '/auth/accounts/:user',
    auth: operator,
    params: z.object({ user }),
    body: {
      schema: z
        .strictObject({ password: newPassword.optional(), roles: roles.optional(), name: label(60).optional(), disabled: z.boolean().optional(), email: email.nullable().optional() })
        .refine((b) => Object.keys(b).length > 0, 'name at least one of password, roles, name, disabled, email'),
    },
    response: account,
    handler: (ctx) => service.updateAccount(ctx.params.user, ctx.body),
  });

  const staff = { roles: ['staff'] } as const;
  const postAuthDevices = route({
    method: 'POST',
    path: '/auth/devices',
    auth: staff,
    body: { schema: z.strictObject({ gate: label(64), name: label(64) }) },
    response: { 201: z.object({ token: z.string(), device }) },
    handler: async (ctx) => Reply.json(await service.issueDevice(ctx.body, ctx.identity!.id), 201),
  });
  const getAuthDevices = route({ method: 'GET', path: '/auth/devices', auth: staff, response: z.object({ devices: z.array(device) }), cacheControl: 'no-store', handler: async () => ({ devices: await service.devices() }) });
  const deleteAuthDevicesById = route({
    method: 'DELETE',
    path: '/auth/devices/:id',
    auth: staff,
    params: z.object({ id: z.string().regex(/^d_[0-9a-f]{12}$/, 'must be a device id (d_ and 12 hex digits)') }),
    response: z.object({ revoked: z.literal(true), id: z.string() }),
    handler: (ctx) => service.revokeDevice(ctx.params.id),
  });
  return hub.mount('/api', {
    postAuthLogin,
    postAuthLogout,
    getAuthMe,
    postPartnerLogin,
    postPartnerLogout,
    getAuthAccounts,
    postAuthAccounts,
    putAuthAccountsByUser,
    postAuthDevices,
    getAuthDevices,
    deleteAuthDevicesById,
  });
}

