import { generateKeyPairSync } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { leafHash, verifyConsistency } from '../../src/payment/merkle.js';
import { signTreeHead, verifyTreeHead, chainPublicKey } from '../../src/payment/sth.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call } from '../support/http.js';
import { sleep } from '../support/wait.js';

const silent = pino({ level: 'silent' });

describe('signed tree heads and consistency, checked by the hub', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    maru = await startMaru(
      loadConfig(paymentHubEnv(peers, secret, 'payment-sth', { chainKey: true })),
      { logger: silent },
    );
    op = await signIn(maru.url, ['operator'], 'chainops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const record = async (id: string) => {
    const r = await fetch(`${peers.chain.url}/api/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, kind: 'test', data: { id } }) });
    expect(r.status).toBe(201);
  };
  const opH = () => ({ authorization: `Bearer ${op}` });
  const verified = async () => (await call(maru.url, 'GET', '/api/token/ops/chain/alarms', undefined, opH())).body.alarms as { code: string }[];

  let first: { tree_size: number; timestamp: number; root: string; signature: string };

  it('verifies the signed head, then each newer one through a consistency proof', async () => {
    for (let i = 0; i < 5; i++) await record(`a${i}`);
    const a = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(a.status).toBe(200);
    expect(a.body.sth.tree_size).toBe(5);
    expect(a.body.previous).toBeNull();
    expect(verifyTreeHead(chainPublicKey(a.body.public_key), a.body.sth)).toBe(true);
    first = a.body.sth;
    for (let i = 0; i < 8; i++) await record(`b${i}`);
    const b = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(b.status).toBe(200);
    expect(b.body.sth.tree_size).toBe(13);
    expect(b.body.previous).toEqual(first);
    expect(b.body.consistency.length).toBeGreaterThan(0);
    const path = b.body.consistency.map((x: string) => Buffer.from(x, 'hex'));
    expect(verifyConsistency(5, 13, path, Buffer.from(first.root, 'hex'), Buffer.from(b.body.sth.root, 'hex'))).toBe(true);
  });

  it('gives a page what it checks the chain with: the chain\'s key, the bank\'s sign-in, consistency proofs between any two sizes; bad ranges are 400', async () => {
    // the chain calls' limit counts in fixed one-minute windows: all of this test's calls must fall in
    // one, so a window about to turn is let turn first
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 20_000) await sleep(left + 50);
    const cfg = await call(maru.url, 'GET', '/api/token/config');
    expect(cfg.status).toBe(200);
    expect(cfg.body).toEqual({ sso_login_url: `${peers.banking.url}/sso/login`, chain_public_key: peers.chain.state.publicKey });
    const c = await call(maru.url, 'GET', '/api/token/chain/consistency?first=5&second=13');
    expect(c.status).toBe(200);
    const path = c.body.consistency.map((x: string) => Buffer.from(x, 'hex'));
    const head = (await call(maru.url, 'GET', '/api/token/chain/sth')).body.sth;
    expect(head.tree_size).toBe(13);
    expect(verifyConsistency(5, 13, path, Buffer.from(first.root, 'hex'), Buffer.from(head.root, 'hex'))).toBe(true);
    for (const q of ['first=13&second=5', 'first=5&second=999', 'first=-1&second=3', 'first=x&second=3', 'first=1']) {
      const bad = await call(maru.url, 'GET', `/api/token/chain/consistency?${q}`);
      expect(bad.status, q).toBe(400);
      expect(typeof bad.body.error.code, q).toBe('string');
    }
    // open to anyone, a chain call each: 60 a minute per client (the calls above count), then 429
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) statuses.push((await call(maru.url, 'GET', '/api/token/chain/consistency?first=1&second=13')).status);
    const firstRefused = statuses.indexOf(429);
    expect(firstRefused).toBeGreaterThan(50);
    expect(statuses.slice(0, firstRefused).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(firstRefused).every((s) => s === 429)).toBe(true);
    const over = await fetch(`${maru.url}/api/token/chain/consistency?first=1&second=13`);
    expect(over.status).toBe(429);
    expect(over.headers.get('retry-after')).toBeTruthy();
    expect(((await over.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
  }, 60_000);

  it('refuses a forged head (another key) and an out-of-order one, keeping the verified head', async () => {
    const before = await call(maru.url, 'GET', '/api/token/chain/sth');
    const forgedKey = generateKeyPairSync('ed25519').privateKey;
    const forged = signTreeHead(forgedKey, { tree_size: 20, timestamp: Date.now() + 1000, root: 'ab'.repeat(32) });
    const f = await call(maru.url, 'POST', '/api/token/ops/chain/sth', forged, opH());
    expect(f.status).toBe(400);
    expect(f.body.error.code).toBe('tree_head_signature_invalid');
    const old = await call(maru.url, 'POST', '/api/token/ops/chain/sth', first, opH());
    expect(old.status).toBe(409);
    expect(old.body.error.code).toBe('tree_head_out_of_order');
    const bad = await call(maru.url, 'POST', '/api/token/ops/chain/sth', { ...first, root: 'zz' }, opH());
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_tree_head' });
    // a genuinely signed head with the same size and another root: the log forked
    const fork = signTreeHead(peers.chain.state.signingKey, { tree_size: before.body.sth.tree_size, timestamp: before.body.sth.timestamp + 1, root: 'cd'.repeat(32) });
    const fk = await call(maru.url, 'POST', '/api/token/ops/chain/sth', fork, opH());
    expect(fk.status).toBe(409);
    expect(fk.body.error.code).toBe('tree_head_inconsistent');
    expect((await call(maru.url, 'POST', '/api/token/ops/chain/sth', first, {})).status).toBe(401);
    const after = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(after.body.previous).toEqual(before.body.sth);
    expect(after.body.sth.tree_size).toBe(before.body.sth.tree_size);
    expect((await verified()).map((a) => a.code)).toEqual(['tree_head_signature_invalid', 'tree_head_out_of_order', 'invalid_tree_head', 'tree_head_inconsistent']);
  });

  it('detects a rewritten log: the newer head is refused and nothing is accepted', async () => {
    const before = (await call(maru.url, 'GET', '/api/token/chain/sth')).body.sth;
    peers.chain.state.leaves[2] = leafHash('rewritten history');
    await record('c0');
    const r = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('tree_head_inconsistent');
    expect((await verified()).at(-1)!.code).toBe('tree_head_inconsistent');
    // the verified head stayed where it was: the honest-looking newer head is refused again
    const again = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(again.status).toBe(409);
    const same = await call(maru.url, 'POST', '/api/token/ops/chain/sth', before, opH());
    expect(same.status).toBe(200);
    expect(same.body.previous).toEqual(before);
  });
});
