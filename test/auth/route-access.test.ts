import { readFileSync, writeFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { RouteEntry } from '../../src/hub/openapi.js';
import { generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';

/**
 * Every route of the table that needs a bearer token, tried without one, with a token that does
 * not exist, and with a valid token of a role the route does not accept. The table of routes and
 * roles in docs/route-access.md is generated from the same route table and checked here, so the
 * page cannot drift from the code (`UPDATE_DOCS=1 npx vitest run test/auth/route-access.test.ts`
 * rewrites it).
 */
const ROLES = ['staff', 'partner', 'editor', 'trader'] as const;
const DOC = new URL('../../docs/route-access.md', import.meta.url);

let maru: Maru;
const tokens = new Map<string, string>();
let ssoToken = '';

beforeAll(async () => {
  // the payment relay's users sign in at the bank: its SSO is the hub's second identity provider
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const SSO_PUBLIC_KEY = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  ssoToken = await new SignJWT({}).setProtectedHeader({ alg: 'EdDSA' }).setSubject('u1').setAudience('maru').setExpirationTime('1h').sign(privateKey);
  maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('route-access'), LOG_LEVEL: 'silent', SSO_PUBLIC_KEY, SSO_AUDIENCE: 'maru', ...AUTH_TEST_ENV }), {
    logger: pino({ level: 'silent' }),
  });
  for (const role of ROLES) tokens.set(role, await signIn(maru.url, [role]));
});
afterAll(() => maru?.stop());

const concrete = (path: string) => path.replace(/:(\w+)/g, 'x1').replace(/\*$/, 'x1');
const guarded = (e: RouteEntry) => e.def.auth !== undefined && !e.def.auth.optional;
const routes = () => maru.hub.api.routes().filter((e) => e.kind !== 'page');

function access(e: RouteEntry): string {
  if (!e.def.auth) return 'none (public, or its own credential: see the service page)';
  if (e.def.auth.provider === 'sso') return "the bank's SSO user (identity provider `sso`)";
  const roles = e.def.auth.roles?.length ? e.def.auth.roles.join(', ') : 'any signed-in identity';
  return e.def.auth.optional ? `optional bearer (${roles} when given)` : roles;
}

function table(): string {
  const rows = [...routes()]
    .sort((a, b) => a.path.localeCompare(b.path) || a.method.localeCompare(b.method))
    .map((e) => `| ${e.method} | \`${e.path}\` | ${access(e)} | ${guarded(e) ? 'test/auth/route-access.test.ts' : '—'} |`);
  return [
    '# Route access',
    '',
    'Generated from the hub\'s route table by `test/auth/route-access.test.ts`, which fails when this',
    'page and the code disagree, and which tries every guarded route without a token (401 with',
    '`WWW-Authenticate`), with an unknown token (401) and with a signed-in account of a role the route',
    'does not accept (403). The operator passes every role check. Routes of the bank\'s SSO user take',
    'that token alone: a hub token of any role is refused there with 401, and the SSO token is refused',
    'on every other guarded route. Routes marked "none" are public or check a credential of their own',
    '(the coaching owner key, the signed exchange), tested in their service\'s tests. Pages are public;',
    'what they show comes from these routes.',
    '',
    '| Method | Path | Roles | Refusal test |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}

describe('route access', () => {
  it('docs/route-access.md is the route table', () => {
    const now = table();
    if (process.env.UPDATE_DOCS === '1') writeFileSync(DOC, now);
    expect(readFileSync(DOC, 'utf8')).toBe(now);
  });

  it('every guarded route refuses a missing, an unknown and a wrong-role credential', async () => {
    const list = routes().filter(guarded);
    expect(list.length).toBeGreaterThan(30);
    const failures: string[] = [];
    for (const e of list) {
      const path = concrete(e.path);
      const body = e.method === 'GET' || e.method === 'HEAD' ? undefined : {};
      const none = await call(maru.url, e.method, path, body);
      if (none.status !== 401 || !/^Bearer/.test(none.headers.get('www-authenticate') ?? '')) failures.push(`${e.method} ${e.path} without a token: ${none.status}`);
      const unknown = await call(maru.url, e.method, path, body, bearer(`mt_${'A'.repeat(43)}`));
      if (unknown.status !== 401) failures.push(`${e.method} ${e.path} with an unknown token: ${unknown.status}`);
      // a credential of the other source is no credential here
      const other = e.def.auth!.provider === 'sso' ? [...tokens.values()] : [ssoToken];
      for (const token of other) {
        const crossed = await call(maru.url, e.method, path, body, bearer(token));
        if (crossed.status !== 401) failures.push(`${e.method} ${e.path} with a token of the other source: ${crossed.status}`);
      }
      const roles = e.def.auth!.roles ?? [];
      const outsider = ROLES.find((r) => roles.length > 0 && !roles.includes(r));
      if (outsider) {
        const wrong = await call(maru.url, e.method, path, body, bearer(tokens.get(outsider)!));
        if (wrong.status !== 403 || wrong.body?.error?.code !== 'forbidden') failures.push(`${e.method} ${e.path} as ${outsider}: ${wrong.status}`);
      }
    }
    expect(failures).toEqual([]);
    // and the SSO token refused above is a good one where it belongs
    expect((await call(maru.url, 'GET', '/api/token/my/challenges', undefined, bearer(ssoToken))).status).toBe(200);
  });
});
