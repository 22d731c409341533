import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { SsoVerifier } from '../../src/payment/sso.js';
import { refusal } from '../support/refusal.js';

// The bank's key set is fetched by the hub's one peer client (src/peers/http-client.ts), not by
// jose's own fetch: a real loopback key-set server sees the peer client's request (no fetch
// metadata headers, jose's accept header passed on) and a key set over the peer client's size
// limit is the bank's fault (503), never a 401.

const NOW = Date.UTC(2026, 10, 27, 12, 0, 0);
const clock = new ManualClock(NOW);
let ed: { privateKey: CryptoKey; publicKey: CryptoKey };
let server: Server;
let base: string;
let set: string;
const seen: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  ed = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
  set = JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed', alg: 'EdDSA' }] });
  server = createServer((req, res) => {
    seen.push(req.headers);
    if (req.url === '/big') {
      // a key set padded past 1 MiB: a valid JSON key set, but more than a key set is allowed to be
      const pad = 'x'.repeat(1024 * 1024 + 16);
      return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ...JSON.parse(set), pad }));
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(set);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const token = () =>
  new SignJWT({ sub: 'kim' })
    .setProtectedHeader({ alg: 'EdDSA', kid: 'ed' })
    .setIssuedAt(Math.floor(NOW / 1000))
    .setExpirationTime(Math.floor(NOW / 1000) + 3600)
    .sign(ed.privateKey);

describe('the SSO key set through the peer client', () => {
  it('is asked for with the peer client (jose\'s accept header, none of fetch\'s own headers) and verifies the token', async () => {
    seen.length = 0;
    const v = new SsoVerifier({ jwksUrl: `${base}/jwks`, clock });
    expect(await v.user(await token())).toBe('kim');
    expect(seen).toHaveLength(1);
    const h = seen[0]!;
    expect(h.accept).toBe('application/json, application/jwk-set+json');
    expect(h.connection).toBe('close');
    // Node's fetch (undici) always sends these; the peer client never does
    expect(h['sec-fetch-mode']).toBeUndefined();
    expect(h['accept-language']).toBeUndefined();
  });

  it('a key set over the size limit is the bank out of reach (503 sso_unavailable), not the token\'s fault', async () => {
    const v = new SsoVerifier({ jwksUrl: `${base}/big`, clock });
    const r = await refusal(v.user(await token()));
    expect([r.status, r.code]).toEqual([503, 'sso_unavailable']);
  });
});
