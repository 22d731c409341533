import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { SsoVerifier, USER_ID_RE } from '../../src/payment/sso.js';
import { refusal } from '../support/refusal.js';

// The payment relay's identity (src/payment/sso.ts, docs/payment.md "Users and operators"): the
// bank's SSO token, verified against its key set on a loopback server (a real HTTP server behind
// the hub's peer client, handed to jose) or a configured PEM key. Who the caller is comes from `sub` alone; a token that
// is not valid is 401, and a bank whose keys cannot be had is 503, never a 401 that blames the token.

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const clock = new ManualClock(NOW);
let ed: { privateKey: CryptoKey; publicKey: CryptoKey };
let es: { privateKey: CryptoKey; publicKey: CryptoKey };
let other: { privateKey: CryptoKey; publicKey: CryptoKey };
/** What the key-set server answers next: the set, a status, or no answer at all. */
let answer: { status: number; body: string } | 'hang' = { status: 200, body: '' };
let jwks: Server;
let jwksUrl: string;

beforeAll(async () => {
  ed = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  es = await generateKeyPair('ES256');
  other = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  const set = JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed', alg: 'EdDSA' }, { ...(await exportJWK(es.publicKey)), kid: 'es', alg: 'ES256' }] });
  answer = { status: 200, body: set };
  jwks = createServer((_req, res) => {
    if (answer === 'hang') return;
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  await new Promise<void>((r) => jwks.listen(0, '127.0.0.1', r));
  jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;
});
afterAll(async () => {
  jwks.closeAllConnections();
  await new Promise((r) => jwks.close(r));
});

type Claims = { sub?: string | number; exp?: number; iss?: string; aud?: string };
async function token(claims: Claims, key = ed.privateKey, header: { alg: string; kid?: string } = { alg: 'EdDSA', kid: 'ed' }): Promise<string> {
  const { sub, exp, iss, aud } = claims;
  const j = new SignJWT(sub === undefined ? {} : ({ sub } as { sub: string })).setProtectedHeader(header).setIssuedAt(Math.floor(NOW / 1000));
  if (exp !== undefined) j.setExpirationTime(exp);
  if (iss !== undefined) j.setIssuer(iss);
  if (aud !== undefined) j.setAudience(aud);
  return j.sign(key);
}
const inAnHour = Math.floor(NOW / 1000) + 3600;
const code = async (p: Promise<unknown>) => {
  const r = await refusal(p);
  return `${r.status} ${r.code}`;
};

describe('a valid token names its user', () => {
  it('EdDSA and ES256 tokens verified against the key set; the user is `sub`', async () => {
    const v = new SsoVerifier({ jwksUrl, clock });
    expect(await v.user(await token({ sub: 'kim.01', exp: inAnHour }))).toBe('kim.01');
    expect(await v.user(await token({ sub: 'lee_2', exp: inAnHour }, es.privateKey, { alg: 'ES256', kid: 'es' }))).toBe('lee_2');
  });

  it('a PEM key, either kind, with its line breaks written as \\n (as an environment variable carries them)', async () => {
    for (const [pair, header] of [[ed, { alg: 'EdDSA' }], [es, { alg: 'ES256' }]] as const) {
      const pem = (await exportSPKI(pair.publicKey)).replace(/\n/g, '\\n');
      const v = new SsoVerifier({ publicKeyPem: pem, clock });
      expect(v.configured).toBe(true);
      expect(await v.user(await token({ sub: 'park', exp: inAnHour }, pair.privateKey, header))).toBe('park');
    }
  });
});

describe('refusals', () => {
  it('expiry is checked at the hub clock, to the second', async () => {
    const v = new SsoVerifier({ jwksUrl, clock });
    const exp = Math.floor(NOW / 1000) + 1;
    const t = await token({ sub: 'kim', exp });
    expect(await v.user(t)).toBe('kim');
    clock.set(exp * 1000 - 1);
    expect(await v.user(t)).toBe('kim');
    clock.set(exp * 1000);
    const r = await refusal(v.user(t));
    expect([r.status, r.code, r.message]).toEqual([401, 'invalid_token', 'the SSO token has expired']);
    clock.set(NOW);
  });

  it('a token without exp or sub, or with a sub that is not a user id, is not valid', async () => {
    const v = new SsoVerifier({ jwksUrl, clock });
    expect(await code(v.user(await token({ sub: 'kim' })))).toBe('401 invalid_token');
    expect(await code(v.user(await token({ exp: inAnHour })))).toBe('401 invalid_token');
    for (const sub of ['', 'a'.repeat(65), 'kim/../admin', '김', 'a b']) {
      const r = await refusal(v.user(await token({ sub, exp: inAnHour })));
      expect([r.status, r.code, r.message]).toEqual([401, 'invalid_token', 'the SSO token is not valid']);
    }
    expect(await v.user(await token({ sub: 'a'.repeat(64), exp: inAnHour }))).toBe('a'.repeat(64));
    // a number is no user id, even one whose digits would pass as one
    expect(await code(v.user(await token({ sub: 12345, exp: inAnHour })))).toBe('401 invalid_token');
    expect(USER_ID_RE.test('A-z_0.9')).toBe(true);
  });

  it('a token signed by another key, under another kid or with an algorithm not allowed is not valid', async () => {
    const v = new SsoVerifier({ jwksUrl, clock });
    const forged = await refusal(v.user(await token({ sub: 'kim', exp: inAnHour }, other.privateKey)));
    expect([forged.status, forged.code, forged.message]).toEqual([401, 'invalid_token', 'the SSO token is not valid']);
    expect(await code(v.user(await token({ sub: 'kim', exp: inAnHour }, other.privateKey, { alg: 'EdDSA', kid: 'nobody' })))).toBe('401 invalid_token');
    const hs = await new SignJWT({ sub: 'kim' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime(inAnHour).sign(new TextEncoder().encode('x'.repeat(32)));
    expect(await code(v.user(hs))).toBe('401 invalid_token');
    const pem = new SsoVerifier({ publicKeyPem: await exportSPKI(ed.publicKey), clock });
    expect(await code(pem.user(await token({ sub: 'kim', exp: inAnHour }, other.privateKey)))).toBe('401 invalid_token');
  });

  it('issuer and audience are checked when configured, and only then', async () => {
    const strict = new SsoVerifier({ jwksUrl, clock, issuer: 'https://bank.example', audience: 'maru' });
    const loose = new SsoVerifier({ jwksUrl, clock });
    const right = await token({ sub: 'kim', exp: inAnHour, iss: 'https://bank.example', aud: 'maru' });
    expect(await strict.user(right)).toBe('kim');
    expect(await loose.user(await token({ sub: 'kim', exp: inAnHour, iss: 'elsewhere', aud: 'other' }))).toBe('kim');
    expect(await code(strict.user(await token({ sub: 'kim', exp: inAnHour, iss: 'https://bank.example', aud: 'other' })))).toBe('401 invalid_token');
    expect(await code(strict.user(await token({ sub: 'kim', exp: inAnHour, iss: 'elsewhere', aud: 'maru' })))).toBe('401 invalid_token');
    expect(await code(strict.user(await token({ sub: 'kim', exp: inAnHour })))).toBe('401 invalid_token');
  });

  it('a malformed token is refused before any key is asked for, up to 4096 characters', async () => {
    const v = new SsoVerifier({ clock });
    for (const t of ['', 'a b', 'a'.repeat(4097), 'abc$def', 'a.b.c\n']) {
      const r = await refusal(v.user(t));
      expect([r.status, r.code, r.message]).toEqual([401, 'invalid_token', 'the SSO token is malformed']);
    }
    // well-formed, but no key configured: the service's fault, not the token's
    const none = await refusal(v.user('a'.repeat(4096)));
    expect([none.status, none.code, none.message]).toEqual([503, 'sso_not_configured', 'no SSO_JWKS_URL or SSO_PUBLIC_KEY is configured']);
    expect(new SsoVerifier({ clock }).configured).toBe(false);
  });

  it('well-formed garbage under a key set is the token\'s fault (401), not the bank\'s', async () => {
    const v = new SsoVerifier({ jwksUrl, clock });
    for (const t of ['a.b.c', 'eyJhbGciOiJFZERTQSJ9.e30.AAAA', 'x', 'eyJhbGciOiJFZERTQSIsImtpZCI6ImVkIn0.bm90IGpzb24.AAAA']) {
      expect(await code(v.user(t)), t).toBe('401 invalid_token');
    }
  });
});

describe('the bank\'s key set out of reach is a 503, not the token\'s fault', () => {
  it('connection refused', async () => {
    const v = new SsoVerifier({ jwksUrl: 'http://127.0.0.1:1/jwks', clock });
    const r = await refusal(v.user(await token({ sub: 'kim', exp: inAnHour })));
    expect([r.status, r.code, r.message]).toEqual([503, 'sso_unavailable', 'the banking service keys could not be fetched']);
  });

  it('an error status, an answer that is not JSON, or not a key set', async () => {
    for (const a of [{ status: 503, body: '{}' }, { status: 200, body: 'not json' }, { status: 200, body: '{"keys":"none"}' }]) {
      answer = a;
      // a fresh verifier: jose keeps a fetched set for its cache age
      const v = new SsoVerifier({ jwksUrl, clock });
      expect(await code(v.user(await token({ sub: 'kim', exp: inAnHour }))), JSON.stringify(a)).toBe('503 sso_unavailable');
    }
    answer = { status: 200, body: JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed', alg: 'EdDSA' }] }) };
  });

  it('no answer within the time-out (2 s)', async () => {
    answer = 'hang';
    try {
      const v = new SsoVerifier({ jwksUrl, clock });
      expect(await code(v.user(await token({ sub: 'kim', exp: inAnHour })))).toBe('503 sso_unavailable');
    } finally {
      answer = { status: 200, body: JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed', alg: 'EdDSA' }] }) };
    }
  });
});
