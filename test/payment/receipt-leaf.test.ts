import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { leafHash } from '../../src/payment/merkle.js';
import { chainLeafData, newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { paymentHubEnv } from '../support/payment.js';
import { call, until } from '../support/http.js';

// A receipt's `verified` binds the receipt to its leaf: the hub recomputes the leaf from the
// receipt's content, so a leaf rewritten on the chain before the hub first trusts a head (the first
// head is taken on first use unless a head is pinned) does not verify, whatever its inclusion proof.

const silent = pino({ level: 'silent' });
let n = 0;
const key = () => `rl-${Date.now()}-${++n}`;

describe('a receipt is verified only against its own leaf', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-receipt-leaf', { chainKey: true, extra: { OUTBOX_RETRY_MIN_MS: '50', OUTBOX_RETRY_MAX_MS: '200' } })),
      { logger: silent },
    );
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const as = async (user: string) => ({ authorization: `Bearer ${await peers.banking.issueToken(user)}` });
  async function topUp(user: string, krw: number): Promise<void> {
    const r = await call(maru.url, 'POST', '/api/token/onramp', { amount_krw: krw, method: 'card' }, { ...(await as(user)), 'idempotency-key': key(), accept: 'application/json' });
    expect(r.status).toBe(200);
    const q = new URL(r.body.location).searchParams;
    expect((await peers.banking.confirm(q.get('ref')!, q)).webhook_status).toBe(200);
  }

  it('a leaf rewritten before the first head is verified reads verified: false; an untouched one reads true', async () => {
    await topUp('rhea', 100_000);
    await topUp('rhea', 120_000);
    const h = await as('rhea');
    const list = (await call(maru.url, 'GET', '/api/token/receipts', undefined, h)).body.receipts as { receipt_hash: string; prev_hash: string; n: number }[];
    expect(list).toHaveLength(2);
    const [newer, older] = list as [(typeof list)[0], (typeof list)[0]];
    // both recorded on the chain (a receipt read would have the hub verify a head: none is read yet)
    await until('both receipts on the chain', () => [older, newer].every((x) => peers.chain.state.byId.has(`receipt:${x.receipt_hash}`)) || undefined);
    // the chain rewrites the older receipt's leaf (another kind); the hub's first head, trusted on
    // first use, is of the rewritten log
    const idx = peers.chain.state.byId.get(`receipt:${older.receipt_hash}`)!;
    peers.chain.state.leaves[idx] = leafHash(chainLeafData(`receipt:${older.receipt_hash}`, 'receipt', { hash: older.receipt_hash, prev_hash: older.prev_hash, n: older.n, kind: 'offramp_return' }));
    for (const x of [older, newer]) {
      await until(`chain link of ${x.receipt_hash}`, async () => (await call(maru.url, 'GET', `/api/token/receipt/${x.receipt_hash}`, undefined, h)).body.chain ?? undefined);
    }

    const bad = await call(maru.url, 'GET', `/api/token/receipt/${older.receipt_hash}`, undefined, h);
    expect(bad.status).toBe(200);
    expect(bad.body.proof.leaf_hash).toBe(peers.chain.state.leaves[idx]!.toString('hex'));
    expect(bad.body.sth).not.toBeNull(); // the proof itself checks against the head...
    expect(bad.body.verified).toBe(false); // ...but the leaf is not this receipt's
    const good = await call(maru.url, 'GET', `/api/token/receipt/${newer.receipt_hash}`, undefined, h);
    expect(good.body.verified).toBe(true);
    expect(good.body.proof.leaf_hash).toBe(leafHash(chainLeafData(`receipt:${newer.receipt_hash}`, 'receipt', { hash: newer.receipt_hash, prev_hash: good.body.receipt.prev_hash, n: good.body.receipt.n, kind: 'onramp' })).toString('hex'));
  });
});
