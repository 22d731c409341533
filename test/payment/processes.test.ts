import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { CHALLENGES } from '../../src/payment/rules.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const prefix = uniquePrefix('payment');

describe.skipIf(!redis.available)('concurrent purchases on two hub processes sharing Redis', () => {
  let peers: PaymentStandins;
  let hubs: HubProcess[] = [];
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    const env = {
      ...AUTH_TEST_ENV, REDIS_URL: redis.url, REDIS_PREFIX: prefix, DATA_DIR: tempDir('payment-proc'), TRADING_WORKERS: '1',
      // these processes verify the SSO token with the configured PEM key (no JWKS endpoint)
      SSO_PUBLIC_KEY: peers.banking.state.publicPem!, SSO_ISSUER: peers.banking.url, SSO_AUDIENCE: 'maru', BANKING_URL: peers.banking.url, BANKING_WEBHOOK_SECRET: secret,
      CHAIN_URL: peers.chain.url, BROKER_URL: peers.broker.url, PRICE_PROVIDER_URLS: peers.prices.map((p) => p.url).join(','),
    };
    hubs = [await startHubProcess(env), await startHubProcess(env)];
  }, 60_000);
  afterAll(async () => {
    await Promise.all(hubs.map((h) => h.stop()));
    await peers?.close();
    await deletePrefix(redis.url, prefix);
  });

  it('exactly the affordable buys succeed; the ledger checks out', async () => {
    const op = { authorization: `Bearer ${await signIn(hubs[0]!.url, ['operator'])}` };
    const user = `racer${Date.now()}`;
    const h = { authorization: `Bearer ${await peers.banking.issueToken(user)}` };
    // fund the wallet from the boundary: 650 tokens via an on-ramp of 650 x KRW per token
    const r = await fetch(`${hubs[0]!.url}/api/token/onramp`, {
      method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/json', 'idempotency-key': `or-${user}`, ...h },
      body: JSON.stringify({ amount_krw: 360_000, method: 'transfer' }),
    });
    expect(r.status).toBe(303);
    const loc = new URL(r.headers.get('location')!);
    expect((await peers.banking.confirm(loc.searchParams.get('ref')!, loc.searchParams)).webhook_status).toBe(200);
    const start = BigInt((await call(hubs[1]!.url, 'GET', '/api/token/wallet', undefined, h)).body.balance);
    // five purchases of every kind at once, alternating between the two processes
    const answers = await Promise.all(
      CHALLENGES.map((c, i) =>
        call(hubs[i % 2]!.url, 'POST', '/api/token/challenge/buy', { challenge_id: c.challenge_id, user_id: user }, { 'idempotency-key': `buy-${c.challenge_id}`, ...h }),
      ),
    );
    let spent = 0n;
    const refused: bigint[] = [];
    answers.forEach((a, i) => {
      const fee = BigInt(CHALLENGES[i]!.entry_fee);
      if (a.status === 200) spent += fee;
      else {
        expect(a.status).toBe(409);
        expect(a.body.error.code).toBe('insufficient_balance');
        refused.push(fee);
      }
    });
    const end = BigInt((await call(hubs[0]!.url, 'GET', '/api/token/wallet', undefined, h)).body.balance);
    expect(end).toBe(start - spent);
    expect(end >= 0n).toBe(true);
    // every refused purchase was really unaffordable when it was refused: none fits in what is left
    for (const fee of refused) expect(fee > end).toBe(true);
    expect(refused.length).toBeGreaterThan(0);
    const check = await call(hubs[1]!.url, 'GET', '/api/token/ops/ledger/check', undefined, op);
    expect(check.body.ledger).toMatchObject({ ok: true, mismatches: [], negative: [] });
    expect(check.body.receipts.ok).toBe(true);
  });
});
