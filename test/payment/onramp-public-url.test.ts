import { request } from 'node:http';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { paymentHubEnv } from '../support/payment.js';

const silent = pino({ level: 'silent' });

/** POST /api/token/onramp with a chosen Host header (fetch would not send one). */
function onramp(base: string, token: string, host: string, key: string): Promise<{ status: number; location?: string }> {
  const u = new URL(base);
  const body = JSON.stringify({ amount_krw: 10_000, method: 'card' });
  return new Promise((resolve, reject) => {
    const req = request(
      { host: u.hostname, port: u.port, path: '/api/token/onramp', method: 'POST', headers: { host, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: `Bearer ${token}`, 'idempotency-key': key } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('on-ramp addresses come from configuration, never from the Host header', () => {
  let peers: PaymentStandins;
  const hubs: Maru[] = [];
  const secret = newWebhookSecret();

  const env = (extra: Record<string, string>) => loadConfig(paymentHubEnv(peers, secret, 'payment-public-url', { extra }));

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
  });
  afterAll(async () => {
    for (const h of hubs) await h.stop();
    await peers?.close();
  });

  it('uses PUBLIC_URL for notify and return', async () => {
    const maru = await startMaru(env({ PUBLIC_URL: 'https://maru.example.kr/' }), { logger: silent });
    hubs.push(maru);
    const r = await onramp(maru.url, await peers.banking.issueToken('hosty'), 'evil.example', 'pu-1');
    expect(r.status).toBe(303);
    expect(r.location).toBeDefined();
    expect(r.location).not.toContain('evil.example');
    const q = new URL(r.location!).searchParams;
    expect(q.get('notify')).toBe('https://maru.example.kr/api/token/banking/webhook');
    expect(q.get('return')).toBe('https://maru.example.kr/wallet');
  });

  it('without PUBLIC_URL uses the address the hub listens on', async () => {
    const maru = await startMaru(env({}), { logger: silent });
    hubs.push(maru);
    const r = await onramp(maru.url, await peers.banking.issueToken('hosty2'), 'evil.example:8080', 'pu-2');
    expect(r.status).toBe(303);
    expect(r.location).not.toContain('evil.example');
    const q = new URL(r.location!).searchParams;
    expect(q.get('notify')).toBe(`${maru.url}/api/token/banking/webhook`);
    expect(q.get('return')).toBe(`${maru.url}/wallet`);
  });
});
