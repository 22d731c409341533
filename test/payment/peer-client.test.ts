import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PeerError, peerJson } from '../../src/peers/index.js';
import { BankingClient, BrokerClient, ChainClient, PriceProviderClient } from '../../src/payment/peers.js';
import { startBrokerStandin, startChainStandin, startPriceStandin, type BrokerState, type ChainState, type PriceState } from '../../src/payment/standins.js';
import type { Standin } from '../../src/peers/index.js';

/**
 * The payment relay's peer clients on the hub's one peer client (src/peers/http-client.ts), against
 * real servers on loopback: the stand-ins, a server the test scripts, and one over TLS.
 */

let chain: Standin<ChainState>;
let price: Standin<PriceState>;
let broker: Standin<BrokerState>;
const closers: Array<() => Promise<void>> = [];

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

function serve(server: HttpServer, handler: Handler): Promise<string> {
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => handler(req, res, body));
  });
  server.on('connection', (s) => s.on('error', () => undefined));
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
      resolve(`${(server.address() as AddressInfo).port}`);
    }),
  );
}

/** A loopback HTTP server whose answers the test writes. */
const scripted = async (handler: Handler) => `http://127.0.0.1:${await serve(createHttpServer(), handler)}`;

async function rejection(p: Promise<unknown>): Promise<PeerError> {
  try {
    await p;
  } catch (err) {
    return err as PeerError;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  [chain, price, broker] = await Promise.all([startChainStandin({ port: 0 }), startPriceStandin({ port: 0 }), startBrokerStandin({ port: 0 })]);
});

afterAll(async () => {
  await Promise.all([chain.close(), price.close(), broker.close(), ...closers.map((c) => c())]);
});

describe('payment peer clients against the loopback stand-ins', () => {
  it('records on the chain once per id and reads its proof and tree head', async () => {
    const c = new ChainClient(`${chain.url}/`, 2000);
    const link = await c.record('rec-1', 'purchase', { amount: '5' });
    expect(link).toMatchObject({ leaf_index: 0, tree_size: 1 });
    expect(link.tx_id).toMatch(/^0x[0-9a-f]{64}$/);
    const again = await c.record('rec-1', 'purchase', { amount: '5' });
    expect(again.tx_id).toBe(link.tx_id);
    expect(chain.state.records).toHaveLength(1);
    const proof = await c.proof(0);
    expect(proof).toMatchObject({ leaf_index: 0, tree_size: 1, audit_path: [] });
    expect(await c.sth()).toMatchObject({ tree_size: 1 });
  });

  it("a peer's refusal is a PeerError with the status and the peer's code (the relay maps 400 and 404 from it)", async () => {
    const err = await rejection(new ChainClient(chain.url, 2000).consistency(5, 1));
    expect(err).toBeInstanceOf(PeerError);
    expect(err.code).toBe('status');
    expect(err.status).toBe(400);
    expect(err.message).toBe('chain answered 400: invalid_range (first and second must satisfy 0 <= first <= second <= tree size)');
  });

  it('the broker creates an account once; the price provider answers its samples', async () => {
    const b = new BrokerClient(broker.url, 2000);
    const input = { account_id: 'BA-1', user: 'u1', account_size: 10_000, challenge: 'c1' };
    expect(await b.createAccount(input)).toMatchObject({ created: true });
    expect(await b.createAccount(input)).toMatchObject({ created: false });
    const samples = await new PriceProviderClient('p1', price.url, 2000).quotes(0, 30_000);
    expect(samples.map((s) => s.t)).toEqual([0, 10_000, 20_000, 30_000]);
  });

  it('sends JSON with the Idempotency-Key and reads a chunked answer', async () => {
    let seen: { method?: string; path?: string; key?: string; type?: string; body?: string } = {};
    const url = await scripted((req, res, body) => {
      seen = { method: req.method, path: req.url, key: req.headers['idempotency-key'] as string, type: req.headers['content-type'], body };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"ok":');
      res.end('true}');
    });
    expect(await new BankingClient(`${url}/bank`, 2000).offramp('off-1', { amount: '3' })).toEqual({ ok: true });
    expect(seen).toEqual({ method: 'POST', path: '/bank/api/offramp', key: 'off-1', type: 'application/json', body: '{"amount":"3"}' });
  });

  it('a 2xx that is not JSON, a peer down, a slow peer and an aborted call each fail with their own code', async () => {
    const notJson = await scripted((_req, res) => res.end('<html>'));
    const e1 = await rejection(new BankingClient(notJson, 2000).payment('x'));
    expect([e1.code, e1.message]).toEqual(['protocol', 'banking answered something other than JSON']);

    // a port nothing listens on any more
    const downServer = createHttpServer();
    await new Promise<void>((r) => downServer.listen(0, '127.0.0.1', r));
    const deadPort = (downServer.address() as AddressInfo).port;
    await new Promise<void>((r) => downServer.close(() => r()));
    const e2 = await rejection(new ChainClient(`http://127.0.0.1:${deadPort}`, 2000).sth());
    expect([e2.code, e2.message]).toEqual(['network', 'chain unreachable: ECONNREFUSED']);

    const slow = await scripted((_req, res) => setTimeout(() => res.end('{}'), 1500));
    const started = Date.now();
    const e3 = await rejection(new PriceProviderClient('p2', slow, 200).quotes(0, 1));
    expect([e3.code, e3.message]).toEqual(['timeout', 'p2 did not answer within 200 ms']);
    expect(Date.now() - started).toBeLessThan(1000);

    const ac = new AbortController();
    const pending = rejection(new BrokerClient(slow, 5000).createAccount({ account_id: 'a', user: 'u', account_size: 1, challenge: 'c' }, ac.signal));
    setTimeout(() => ac.abort(), 50);
    expect((await pending).code).toBe('aborted');
  });

  it('an answer larger than the limit is refused', async () => {
    const big = await scripted((_req, res) => res.end(JSON.stringify({ pad: 'x'.repeat(4096) })));
    const err = await rejection(peerJson({ peer: 'big', url: `${big}/`, timeoutMs: 2000, maxBytes: 1024 }));
    expect([err.code, err.message]).toEqual(['protocol', 'big answer exceeds 1024 bytes']);
  });
});

describe('a peer over https', () => {
  let dir: string;
  let cert: Buffer;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'maru-peer-tls-'));
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    cert = readFileSync(join(dir, 'cert.pem'));
    const port = await serve(createHttpsServer({ key: readFileSync(join(dir, 'key.pem')), cert }), (req, res, body) => {
      if (req.url === '/slow') return void setTimeout(() => res.end('{}'), 1500);
      if (req.url === '/big') return void res.end(JSON.stringify({ pad: 'x'.repeat(4096) }));
      if (req.url === '/missing') return void (res.writeHead(404, { 'content-type': 'application/json' }), res.end('{"error":{"code":"not_found","message":"no such payment"}}'));
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, path: req.url, key: req.headers['idempotency-key'] ?? null, body: body || null }));
    });
    base = `https://127.0.0.1:${port}`;
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('calls a peer whose certificate is trusted, with the same answers and errors as over http', async () => {
    expect(await peerJson({ peer: 'bank', url: `${base}/api/offramp`, method: 'POST', headers: { 'idempotency-key': 'k1' }, json: { a: 1 }, timeoutMs: 2000, ca: cert })).toEqual({
      method: 'POST',
      path: '/api/offramp',
      key: 'k1',
      body: '{"a":1}',
    });
    const missing = await rejection(peerJson({ peer: 'bank', url: `${base}/missing`, timeoutMs: 2000, ca: cert }));
    expect([missing.code, missing.status, missing.message]).toEqual(['status', 404, 'bank answered 404: not_found (no such payment)']);
    const slow = await rejection(peerJson({ peer: 'bank', url: `${base}/slow`, timeoutMs: 200, ca: cert }));
    expect([slow.code, slow.message]).toEqual(['timeout', 'bank did not answer within 200 ms']);
    const big = await rejection(peerJson({ peer: 'bank', url: `${base}/big`, timeoutMs: 2000, maxBytes: 1024, ca: cert }));
    expect([big.code, big.message]).toEqual(['protocol', 'bank answer exceeds 1024 bytes']);
  });

  it('refuses a certificate nobody vouches for (a network failure, nothing sent)', async () => {
    const err = await rejection(new ChainClient(base, 2000).sth());
    expect(err).toBeInstanceOf(PeerError);
    expect(err.code).toBe('network');
    expect(err.message).toMatch(/^chain unreachable: (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)$/);
  });
});
