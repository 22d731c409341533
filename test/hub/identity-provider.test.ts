/**
 * A second identity provider beside the hub's own tokens (the payment relay's bank SSO is one):
 * a route names it in `auth.provider`, the handler learns the caller from ctx.identity alone.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../src/errors.js';
import { Hub } from '../../src/hub/index.js';
import { inject } from '../support/inject.js';
import { tempDir } from '../support/process.js';

let hub: Hub;
let seen: unknown[] = [];
const LONG = `sso.${'x'.repeat(1500)}`;

beforeAll(() => {
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: tempDir('idp-web'), shutdownGraceMs: 200 });
  hub.authenticate(async (token) => (token === 'staff-token' ? { id: 's1', name: 'staff', roles: ['staff'], kind: 'account' } : undefined));
  hub.identityProvider('bank', {
    authenticate: async (token) => {
      if (token === 'bank-down') throw new AppError('unavailable', 'bank_unavailable', 'the bank keys could not be fetched');
      if (token !== LONG && token !== 'sso.u1') throw new AppError('unauthorized', 'invalid_token', 'not a bank token');
      return { id: token === LONG ? 'u-long' : 'u1', name: 'u1', roles: [], kind: 'sso' };
    },
    maxTokenLength: 2048,
    missing: 'sign in at the bank',
    description: 'a bank JWT',
  });
  const reply = (ctx: { identity?: unknown; body?: unknown }) => {
    seen.push(ctx.identity);
    return { who: (ctx.identity as { id: string } | undefined)?.id ?? null };
  };
  hub.route({ method: 'POST', path: '/bank/pay', auth: { provider: 'bank' }, body: { schema: z.object({ n: z.number() }) }, response: z.object({ who: z.string().nullable() }), handler: reply });
  hub.route({ method: 'GET', path: '/bank/maybe', auth: { provider: 'bank', optional: true }, response: z.object({ who: z.string().nullable() }), handler: reply });
  hub.route({ method: 'GET', path: '/staff', auth: { roles: ['staff'] }, response: z.object({ who: z.string().nullable() }), handler: reply });
  hub.route({ method: 'GET', path: '/nobody', auth: { provider: 'nobody' }, handler: () => ({}) });
});
afterAll(() => hub.stop());

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe('an identity provider beside the hub’s own tokens', () => {
  it('gives the handler the provider’s principal as ctx.identity, tokens longer than the hub’s own included', async () => {
    seen = [];
    expect(await inject(hub, 'POST', '/bank/pay', { n: 1 }, bearer('sso.u1'))).toMatchObject({ status: 200, body: { who: 'u1' } });
    expect(await inject(hub, 'POST', '/bank/pay', { n: 1 }, bearer(LONG))).toMatchObject({ status: 200, body: { who: 'u-long' } });
    expect(seen).toEqual([
      { id: 'u1', name: 'u1', roles: [], kind: 'sso' },
      { id: 'u-long', name: 'u1', roles: [], kind: 'sso' },
    ]);
  });

  it('checks the credential before the inputs: no token is 401 with the provider’s words, even with a bad body', async () => {
    seen = [];
    const none = await inject(hub, 'POST', '/bank/pay', { n: 'not a number' });
    expect(none.status).toBe(401);
    expect(none.body.error).toMatchObject({ code: 'unauthorized', message: 'sign in at the bank' });
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(seen).toEqual([]);
  });

  it('takes no token of the other source: the hub’s token on a provider’s route, the provider’s on the hub’s', async () => {
    expect((await inject(hub, 'POST', '/bank/pay', { n: 1 }, bearer('staff-token'))).body.error.code).toBe('invalid_token');
    expect((await inject(hub, 'GET', '/staff', undefined, bearer('sso.u1'))).status).toBe(401);
    expect(await inject(hub, 'GET', '/staff', undefined, bearer('staff-token'))).toMatchObject({ status: 200, body: { who: 's1' } });
  });

  it('refuses a token over its length, a malformed header, and passes the provider’s own refusals through', async () => {
    const over = await inject(hub, 'POST', '/bank/pay', { n: 1 }, bearer(`${LONG}${'y'.repeat(600)}`));
    expect(over.status).toBe(401);
    expect(over.body.error.code).toBe('invalid_token');
    expect((await inject(hub, 'POST', '/bank/pay', { n: 1 }, { authorization: 'Basic abc' })).status).toBe(401);
    const down = await inject(hub, 'POST', '/bank/pay', { n: 1 }, bearer('bank-down'));
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('bank_unavailable');
  });

  it('serves an optional route without a token, and still refuses a wrong one there', async () => {
    expect(await inject(hub, 'GET', '/bank/maybe')).toMatchObject({ status: 200, body: { who: null } });
    expect(await inject(hub, 'GET', '/bank/maybe', undefined, bearer('sso.u1'))).toMatchObject({ status: 200, body: { who: 'u1' } });
    expect((await inject(hub, 'GET', '/bank/maybe', undefined, bearer('forged'))).status).toBe(401);
  });

  it('answers 500 for a route naming a provider nobody registered (a wiring mistake, never a pass)', async () => {
    expect((await inject(hub, 'GET', '/nobody', undefined, bearer('sso.u1'))).status).toBe(500);
  });

  it('refuses a second provider of one name, and documents each in /openapi.json', () => {
    expect(() => hub.identityProvider('bank', { authenticate: async () => ({ id: 'x', name: 'x', roles: [], kind: 'sso' }) })).toThrow('identity provider "bank" is already registered');
    const doc = hub.api.document() as { components: { securitySchemes: Record<string, unknown> }; paths: Record<string, Record<string, { security?: unknown }>> };
    expect(doc.components.securitySchemes.bank).toEqual({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'a bank JWT' });
    expect(doc.paths['/bank/pay']!.post!.security).toEqual([{ bank: [] }]);
    expect(doc.paths['/bank/maybe']!.get!.security).toEqual([{}, { bank: [] }]);
    expect(doc.paths['/staff']!.get!.security).toEqual([{ bearer: [] }]);
  });
});
