import { spawn } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { resolve } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { leafHash, treeHash } from '../../src/payment/merkle.js';
import { signTreeHead } from '../../src/payment/sth.js';
import { newWebhookSecret, startPaymentStandins, type PaymentStandins } from '../../src/payment/standins.js';
import { signIn } from '../support/auth.js';
import { paymentHubEnv } from '../support/payment.js';
import { call, until } from '../support/http.js';
import { MAIN } from '../support/process.js';
import { sleep } from '../support/wait.js';

// The chain is watched with no request (CHAIN_WATCH_MS), a known-good head can be pinned
// (CHAIN_PINNED_HEAD) so the first head is not trusted on first use, and an operator recovers from a
// forged head the hub accepted with `cli.js chain-reset`.

const silent = pino({ level: 'silent' });
const CLI = resolve(import.meta.dirname, '../../dist/src/payment/cli.js');

function run(file: string, args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [file, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

const record = async (peers: PaymentStandins, id: string) => {
  const r = await fetch(`${peers.chain.url}/api/records`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, kind: 'test', data: { id } }) });
  expect(r.status).toBe(201);
};
const rootOf = (peers: PaymentStandins) => treeHash(peers.chain.state.leaves).toString('hex');

describe('the chain settings are checked at start', () => {
  const base = { DATA_DIR: '/tmp/unused', CHAIN_URL: 'http://127.0.0.1:1' };
  const key = Buffer.alloc(32, 7).toString('base64');
  it('a malformed pinned head, chain key or watch interval is refused (the hub exits 2)', async () => {
    const bad: Record<string, string>[] = [
      { CHAIN_PINNED_HEAD: 'abc' },
      { CHAIN_PINNED_HEAD: `0:${'a'.repeat(64)}` },
      { CHAIN_PINNED_HEAD: `12:${'A'.repeat(64)}` },
      { CHAIN_PINNED_HEAD: `12:${'a'.repeat(63)}` },
      { CHAIN_PUBLIC_KEY: Buffer.alloc(31, 7).toString('base64') + '==========' },
      { CHAIN_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nnot a key at all, not a key\n-----END PUBLIC KEY-----' },
      { CHAIN_WATCH_MS: '0' },
      { CHAIN_WATCH_MS: 'soon' },
    ];
    for (const env of bad) expect(() => loadConfig({ ...base, ...env }), JSON.stringify(env)).toThrow(new RegExp(Object.keys(env)[0]!));
    const ok = loadConfig({ ...base, CHAIN_PUBLIC_KEY: key, CHAIN_PINNED_HEAD: `12:${'a'.repeat(64)}`, CHAIN_WATCH_MS: '5000' });
    expect(ok.CHAIN_PINNED_HEAD).toEqual({ tree_size: 12, root: 'a'.repeat(64) });
    expect(ok.CHAIN_WATCH_MS).toBe(5000);
    expect(loadConfig(base).CHAIN_WATCH_MS).toBe(60_000);
    const r = await run(MAIN, [], { ...base, CHAIN_PINNED_HEAD: 'abc', LOG_LEVEL: 'silent' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CHAIN_PINNED_HEAD');
  });
});

describe('the hub watches the chain on its own', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  const secret = newWebhookSecret();
  const WATCH = 1000;

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    for (let i = 0; i < 4; i++) await record(peers, `w${i}`);
    maru = await startMaru(loadConfig(paymentHubEnv(peers, secret, 'payment-chain-watch', { chainKey: true, extra: { CHAIN_WATCH_MS: String(WATCH) } })), { logger: silent });
    op = await signIn(maru.url, ['operator'], 'watchops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });

  const alarms = async () => (await call(maru.url, 'GET', '/api/token/ops/chain/alarms', undefined, { authorization: `Bearer ${op}` })).body.alarms as { code: string; source: string; ts: number }[];
  const metric = async (code: string) => {
    const text = await (await fetch(`${maru.url}/metrics`)).text();
    const m = new RegExp(`^chain_tree_head_alarms_total\\{code="${code}",source="watch"\\} (\\d+)`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };

  it('a head signed with another key, then a rewritten log, raise alarms within the interval with no request', async () => {
    // the watch has taken the honest head (the reads of the alarms verify nothing)
    await sleep(2 * WATCH + 200);
    expect(await alarms()).toEqual([]);
    expect(await metric('tree_head_signature_invalid')).toBe(0);

    const honestKey = peers.chain.state.signingKey;
    peers.chain.state.signingKey = generateKeyPairSync('ed25519').privateKey;
    const t0 = Date.now();
    const forged = await until('the forged head alarmed', async () => (await alarms()).find((a) => a.code === 'tree_head_signature_invalid'), 2 * WATCH + 5000);
    expect(forged.source).toBe('watch');
    expect(Date.now() - t0).toBeLessThan(WATCH + 2 * 2000 + 1000);
    expect(await metric('tree_head_signature_invalid')).toBeGreaterThanOrEqual(1);
    peers.chain.state.signingKey = honestKey;

    // a rewritten leaf and one more record: the newer head does not extend the verified one
    peers.chain.state.leaves[1] = leafHash('rewritten history');
    await record(peers, 'w4');
    const t1 = Date.now();
    const rewritten = await until('the rewrite alarmed', async () => (await alarms()).find((a) => a.code === 'tree_head_inconsistent'), 2 * WATCH + 5000);
    expect(rewritten.source).toBe('watch');
    expect(Date.now() - t1).toBeLessThan(WATCH + 2 * 2000 + 1000);
    // the watch meets the same bad head at each tick: the metric counts each, the record keeps it once
    await sleep(2 * WATCH + 200);
    expect(await metric('tree_head_inconsistent')).toBeGreaterThanOrEqual(2);
    expect((await alarms()).filter((a) => a.code === 'tree_head_inconsistent')).toHaveLength(1);
  }, 30_000);
});

describe('a pinned known-good head, and the recovery after a forged head was accepted', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  let dataDir: string;
  const secret = newWebhookSecret();
  let pinned: { tree_size: number; root: string };

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    for (let i = 0; i < 6; i++) await record(peers, `p${i}`);
    pinned = { tree_size: 6, root: rootOf(peers) };
    const env = paymentHubEnv(peers, secret, 'payment-chain-pin', { chainKey: true, extra: { CHAIN_PINNED_HEAD: `${pinned.tree_size}:${pinned.root}`, CHAIN_WATCH_MS: '3600000' } });
    dataDir = env.DATA_DIR!;
    maru = await startMaru(loadConfig(env), { logger: silent });
    op = await signIn(maru.url, ['operator'], 'pinops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });
  const opH = () => ({ authorization: `Bearer ${op}` });

  it('the first head is checked against the pinned one, not trusted on first use', async () => {
    // the log is rewritten before the hub has seen any head: with the pin, the hub does not take it
    const honest = peers.chain.state.leaves[2]!;
    peers.chain.state.leaves[2] = leafHash('rewritten before first use');
    await record(peers, 'p6');
    const r = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('tree_head_inconsistent');
    // a signed head older than the pin is refused too
    const older = signTreeHead(peers.chain.state.signingKey, { tree_size: 3, timestamp: Date.now(), root: treeHash(peers.chain.state.leaves.slice(0, 3)).toString('hex') });
    const o = await call(maru.url, 'POST', '/api/token/ops/chain/sth', older, opH());
    expect(o.status).toBe(409);
    expect(o.body.error.code).toBe('tree_head_out_of_order');
    // the honest log (extending the pin) is taken
    peers.chain.state.leaves[2] = honest;
    const ok = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(ok.status).toBe(200);
    expect(ok.body.sth.tree_size).toBe(7);
  });

  it('chain-reset without a head resets to the pinned one', async () => {
    const r = await run(CLI, ['chain-reset', '--by', 'ops-lead'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent', CHAIN_PINNED_HEAD: `${pinned.tree_size}:${pinned.root}` });
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).reset).toMatchObject({ anchor: pinned, dropped: { tree_size: 7 } });
    const back = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(back.status).toBe(200);
    expect(back.body.previous).toBeNull();
    expect(back.body.sth.tree_size).toBe(7);
  });
});

describe('the recovery after a forged head was accepted', () => {
  let peers: PaymentStandins;
  let maru: Maru;
  let op: string;
  let dataDir: string;
  const secret = newWebhookSecret();

  beforeAll(async () => {
    peers = await startPaymentStandins({ webhookSecret: secret });
    for (let i = 0; i < 6; i++) await record(peers, `r${i}`);
    const env = paymentHubEnv(peers, secret, 'payment-chain-reset', { chainKey: true, extra: { CHAIN_WATCH_MS: '3600000' } });
    dataDir = env.DATA_DIR!;
    maru = await startMaru(loadConfig(env), { logger: silent });
    op = await signIn(maru.url, ['operator'], 'resetops');
  });
  afterAll(async () => {
    await maru?.stop();
    await peers?.close();
  });
  const opH = () => ({ authorization: `Bearer ${op}` });
  const cli = (args: string[]) => run(CLI, args, { DATA_DIR: dataDir, LOG_LEVEL: 'silent' });

  it('the hub refuses the honest log after a forged head; chain-reset to a known-good head recovers; bad arguments change nothing (exit 2)', async () => {
    const known = { tree_size: 6, root: rootOf(peers) };
    // the chain's key signs a head of a log that does not exist (a compromised signer): with no head
    // pinned and none verified yet, the hub takes it on first use
    const forged = signTreeHead(peers.chain.state.signingKey, { tree_size: 500, timestamp: Date.now() + 60_000, root: 'ee'.repeat(32) });
    const took = await call(maru.url, 'POST', '/api/token/ops/chain/sth', forged, opH());
    expect(took.status).toBe(200);
    await record(peers, 'r6');
    // from then on the honest log is refused, every time
    for (let i = 0; i < 2; i++) {
      const stuck = await call(maru.url, 'GET', '/api/token/chain/sth');
      expect(stuck.status).toBe(409);
      expect(stuck.body.error.code).toBe('tree_head_out_of_order');
    }

    // bad arguments (and no head with none pinned): exit 2, nothing changed
    for (const args of [['chain-reset'], ['chain-reset', 'x:y'], ['chain-reset', `0:${known.root}`], ['chain-reset', `6:${known.root.toUpperCase()}`], ['chain-reset', `6:${known.root}`, '--by'], ['chain-reset', `6:${known.root}`, '--bogus', 'x']]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain('usage');
    }
    expect((await call(maru.url, 'GET', '/api/token/chain/sth')).status).toBe(409);

    // the recovery: the operator resets to a head known good from elsewhere
    const reset = await cli(['chain-reset', `${known.tree_size}:${known.root}`, '--by', 'ops-lead']);
    expect(reset.stderr).toBe('');
    expect(reset.code).toBe(0);
    expect(JSON.parse(reset.stdout).reset).toEqual({ dropped: forged, anchor: known });
    const back = await call(maru.url, 'GET', '/api/token/chain/sth');
    expect(back.status).toBe(200);
    expect(back.body.previous).toBeNull();
    expect(back.body.sth.tree_size).toBe(7);
    const a = (await call(maru.url, 'GET', '/api/token/ops/chain/alarms', undefined, opH())).body.alarms as { code: string; source: string; head: unknown }[];
    expect(a.filter((x) => x.code === 'tree_head_reset')).toMatchObject([{ source: 'operator:ops-lead', head: forged }]);
    // the forged head stays out now
    expect((await call(maru.url, 'POST', '/api/token/ops/chain/sth', forged, opH())).status).not.toBe(200);
    // and a head that does not extend the known-good one would not have been taken after the reset
    await record(peers, 'r7');
    expect((await call(maru.url, 'GET', '/api/token/chain/sth')).body.sth.tree_size).toBe(8);
  }, 30_000);
});
