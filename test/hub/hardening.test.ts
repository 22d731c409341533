/**
 * The hub's answers to what an attacker or a misconfigured deployment sends, each found by an outside
 * review: JSON nested without end, sockets that flood or stall, a request framed two ways (request
 * smuggling), forwarding headers from proxies that are or are not trusted, an SSO token for another
 * audience, a readiness probe while Redis is frozen, and a stop while Redis is gone.
 */
import { generateKeyPairSync } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { SignJWT } from 'jose';
import pino from 'pino';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { ClientAddress, parseTrustedProxies } from '../../src/hub/client-address.js';
import { MAX_JSON_DEPTH, jsonDepthOver } from '../../src/hub/http.js';
import { spendMessage } from '../../src/hub/sockets.js';
import { AUTH_TEST_ENV, signIn } from '../support/auth.js';
import { MAIN, startHubProcess, tempDir } from '../support/process.js';
import { redisBinariesOrSkip, runHubUntilExit, startRedisServer } from '../support/sentinel.js';

const start = (env: Record<string, string> = {}) =>
  startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('hardening'), LOG_LEVEL: 'silent', TRADING_WORKERS: '1', ...AUTH_TEST_ENV, ...env }), {
    logger: pino({ level: 'silent' }),
  });

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

/** Sends raw bytes on a new connection; resolves with everything read until the server closes or `waitMs` passes. */
function raw(port: number, bytes: string, waitMs = 1500): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      s.destroy();
      resolve({ text, closed });
    };
    s.on('data', (d) => (text += d.toString('latin1')));
    s.on('close', () => finish(true));
    s.on('error', () => undefined);
    s.write(bytes);
    setTimeout(() => finish(false), waitMs);
  });
}

describe('JSON nested without end', () => {
  let maru: Maru;
  beforeAll(async () => {
    maru = await start();
  });
  afterAll(() => maru?.stop());

  it('counts depth without parsing, strings and escapes included', () => {
    expect(jsonDepthOver(nested(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(jsonDepthOver(nested(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
    // brackets inside strings, and an escaped quote, are not nesting
    expect(jsonDepthOver(JSON.stringify({ a: '['.repeat(500) + '\\"' + '{'.repeat(500) }), 4)).toBe(false);
    expect(jsonDepthOver(`{"a":"\\"",${'"b":'.repeat(1)}${nested(5)}}`, 5)).toBe(true);
  });

  it.each([5_000, 20_000])('a body %i levels deep with an Idempotency-Key: 400 json_too_deep, not 500', async (depth) => {
    const r = await fetch(`${maru.url}/api/subscriptions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `deep-${depth}` },
      body: `{"a":${nested(depth)}}`,
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('json_too_deep');
  });

  it('a /ws frame nested past the limit is refused by name, the socket stays open', async () => {
    const ws = new WebSocket(`${maru.url.replace(/^http/, 'ws')}/ws`);
    const frames: { type: string; code?: string }[] = [];
    ws.on('message', (d) => frames.push(JSON.parse(String(d))));
    await new Promise((r) => ws.once('open', r));
    ws.send(`{"type":"ping","x":${nested(10_000)}}`);
    ws.send('{"type":"ping"}');
    await expect.poll(() => frames.length).toBe(2);
    expect(frames[0]).toMatchObject({ type: 'error', code: 'json_too_deep' });
    expect(frames[1]).toEqual({ type: 'pong' });
    ws.close();
  });
});

describe('message budgets and stalled sockets', () => {
  let maru: Maru;
  let editor = '';
  beforeAll(async () => {
    maru = await start({ WS_MESSAGE_BURST: '50', WS_MESSAGES_PER_S: '10', WS_IDLE_TIMEOUT_S: '8' });
    editor = await signIn(maru.url, ['editor']);
  });
  afterAll(() => maru?.stop());

  it('a token bucket: a burst, then the rate', () => {
    const data: { tokens?: number; refilledAt?: number } = {};
    const budget = { burst: 3, perSecond: 2 };
    expect([0, 0, 0, 0].map(() => spendMessage(data, budget, 1000))).toEqual([true, true, true, false]);
    // half a second later one message has been earned back, and no more
    expect([spendMessage(data, budget, 1500), spendMessage(data, budget, 1500)]).toEqual([true, false]);
    // a long quiet spell refills to the burst, never past it
    expect([0, 0, 0, 0].map(() => spendMessage(data, budget, 60_000))).toEqual([true, true, true, false]);
  });

  it.each([
    ['ping', '{"type":"ping"}'],
    ['unsubscribe', '{"type":"unsubscribe","topic":"reward"}'],
    ['garbage', 'not json at all'],
  ])('/ws: a flood of %s frames is closed with 1008 once past the budget', async (_what, frame) => {
    const ws = new WebSocket(`${maru.url.replace(/^http/, 'ws')}/ws`);
    let answers = 0;
    ws.on('message', () => answers++);
    await new Promise((r) => ws.once('open', r));
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: String(reason) })));
    for (let i = 0; i < 2_000 && ws.readyState === WebSocket.OPEN; i++) ws.send(frame);
    const { code, reason } = await closed;
    expect(code).toBe(1008);
    expect(reason).toContain('too many messages');
    // the frames past the budget were not handled
    expect(answers).toBeLessThanOrEqual(52);
    const health = await fetch(`${maru.url}/healthz`);
    expect(health.status).toBe(200);
  });

  it('/yjs: a flood of messages is closed with 1008 too', async () => {
    const ws = new WebSocket(`${maru.url.replace(/^http/, 'ws')}/yjs/budget-note?access_token=${editor}`);
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    // an awareness query (y-protocols message 3), harmless and answered: only the count matters
    for (let i = 0; i < 2_000 && ws.readyState === WebSocket.OPEN; i++) ws.send(Uint8Array.of(3));
    expect(await closed).toBe(1008);
  });

  it('a socket that sends two bytes of a frame header and stalls is closed within twice WS_IDLE_TIMEOUT_S', { timeout: 40_000 }, async () => {
    const port = Number(new URL(maru.url).port);
    const s: Socket = connect(port, '127.0.0.1');
    s.on('error', () => undefined);
    let upgraded = '';
    s.on('data', (d) => (upgraded += d.toString('latin1')));
    s.write('GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    await expect.poll(() => upgraded.includes('101 Switching Protocols')).toBe(true);
    const began = Date.now();
    s.write(Buffer.from([0x81, 0xfe])); // a masked text frame with a 16-bit length that never comes
    await new Promise((r) => s.once('close', r));
    const seconds = (Date.now() - began) / 1000;
    expect(seconds).toBeGreaterThan(4);
    expect(seconds).toBeLessThan(2 * 8 + 4);
  });
});

describe('a request framed two ways (request smuggling)', () => {
  let maru: Maru;
  let port = 0;
  beforeAll(async () => {
    maru = await start();
    port = Number(new URL(maru.url).port);
  });
  afterAll(() => maru?.stop());

  const smuggled = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
  it.each([
    ['two Transfer-Encoding headers', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n', '0\r\n\r\n'],
    ['two Content-Length headers', 'Content-Length: 2\r\nContent-Length: 2\r\n', '{}'],
  ])('%s: 400 bad_framing, the connection closed, the request behind it never served', async (_what, framing, body) => {
    const r = await raw(port, `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n${body}${smuggled}`);
    expect(r.closed).toBe(true);
    expect(r.text.startsWith('HTTP/1.1 400')).toBe(true);
    expect(r.text).toContain('bad_framing');
    expect(r.text).not.toContain('200 OK');
    // the next connection is served as usual
    expect((await raw(port, `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`)).text.startsWith('HTTP/1.1 200')).toBe(true);
  });

  it('Content-Length beside Transfer-Encoding: uWS closes the connection itself, and serves nothing behind it', async () => {
    const r = await raw(port, `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`);
    expect(r.closed).toBe(true);
    expect(r.text).not.toContain('200 OK');
  });
});

describe('forwarding headers and TRUST_PROXY', () => {
  it('walks the hops from the right and stops at the first address that is not a trusted proxy', () => {
    const c = new ClientAddress(parseTrustedProxies('10.0.0.0/8, 127.0.0.1, fd00::/8'));
    // an untrusted peer: headers ignored
    expect(c.of('203.0.113.9', { 'x-forwarded-for': '1.2.3.4' })).toBe('203.0.113.9');
    // a trusted peer: the right-most untrusted hop; what the client itself wrote on the left is not believed
    expect(c.of('127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 198.51.100.7, 10.1.2.3' })).toBe('198.51.100.7');
    expect(c.of('::ffff:127.0.0.1', { 'x-forwarded-for': '198.51.100.7' })).toBe('198.51.100.7');
    expect(c.of('fd00::1', { forwarded: 'for=192.0.2.60;proto=http, for="[2001:db8::1]:4711";by=x' })).toBe('2001:db8::1');
    expect(c.of('127.0.0.1', { forwarded: 'for=198.51.100.7:8080' })).toBe('198.51.100.7');
    // every hop a trusted proxy: the left-most is as far as is known
    expect(c.of('127.0.0.1', { 'x-forwarded-for': '10.0.0.1, 10.0.0.2' })).toBe('10.0.0.1');
    // a hop that is not an address ends the walk at the last trusted one
    expect(c.of('127.0.0.1', { 'x-forwarded-for': 'unknown, 10.0.0.2' })).toBe('10.0.0.2');
    // no header: the peer
    expect(c.of('127.0.0.1', {})).toBe('127.0.0.1');
    // no setting: the headers are never read
    expect(new ClientAddress([]).of('127.0.0.1', { 'x-forwarded-for': '198.51.100.7' })).toBe('127.0.0.1');
  });

  it.each(['10.0.0.0/33', 'not-an-address', '1.2.3.4/8/1', '::1/129'])('TRUST_PROXY=%s: exit 2 naming the setting', (value) => {
    const r = runHubUntilExit(MAIN, { DATA_DIR: tempDir('trust'), TRUST_PROXY: value });
    expect(r.code).toBe(2);
    expect(r.output).toContain('TRUST_PROXY');
  });

  const socketsFrom = async (url: string, forwardedFor: string[]) =>
    Promise.all(
      forwardedFor.map(
        (xff) =>
          new Promise<number>((resolve) => {
            const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { headers: { 'x-forwarded-for': xff } });
            ws.once('open', () => resolve(101));
            ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
            ws.once('error', () => resolve(0));
          }),
      ),
    );

  it('behind a trusted proxy, the per-address connection cap counts each forwarded client on its own', async () => {
    const maru = await start({ TRUST_PROXY: '127.0.0.1', CONN_MAX_PER_ADDRESS: '2' });
    try {
      expect(await socketsFrom(maru.url, ['198.51.100.1', '198.51.100.1'])).toEqual([101, 101]);
      // the third of one client is refused; another client behind the same proxy is not
      expect(await socketsFrom(maru.url, ['198.51.100.1'])).toEqual([429]);
      expect(await socketsFrom(maru.url, ['198.51.100.2'])).toEqual([101]);
    } finally {
      await maru.stop();
    }
  });

  it('without TRUST_PROXY, forwarding headers are ignored: every socket counts against the peer', async () => {
    const maru = await start({ CONN_MAX_PER_ADDRESS: '2' });
    try {
      expect(await socketsFrom(maru.url, ['198.51.100.1', '198.51.100.2'])).toEqual([101, 101]);
      expect(await socketsFrom(maru.url, ['198.51.100.3'])).toEqual([429]);
    } finally {
      await maru.stop();
    }
  });
});

describe('the SSO audience', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();

  it('an SSO key without SSO_AUDIENCE: exit 2 naming SSO_AUDIENCE', () => {
    const r = runHubUntilExit(MAIN, { DATA_DIR: tempDir('sso-aud'), SSO_PUBLIC_KEY: pem });
    expect(r.code).toBe(2);
    expect(r.output).toContain('SSO_AUDIENCE');
  });

  it('a token the bank issued for another service is refused; one for this hub is taken', async () => {
    const maru = await start({ SSO_PUBLIC_KEY: pem, SSO_AUDIENCE: 'maru' });
    try {
      const token = (aud: string) => new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setSubject('u-aud').setAudience(aud).setExpirationTime('1h').sign(privateKey);
      const ask = async (t: string) => (await fetch(`${maru.url}/api/token/statement?period=2026-01`, { headers: { authorization: `Bearer ${t}` } })).status;
      expect(await ask(await token('another-service'))).toBe(401);
      expect(await ask(await token('maru'))).not.toBe(401);
    } finally {
      await maru.stop();
    }
  });
});

describe.skipIf(!redisBinariesOrSkip())('a Redis that freezes or goes away', () => {
  it('/readyz answers 503 within 2 s while Redis is frozen', { timeout: 60_000 }, async () => {
    const redis = await startRedisServer({ appendonly: false });
    const hub = await startHubProcess({ ...AUTH_TEST_ENV, DATA_DIR: tempDir('readyz'), REDIS_URL: redis.url, REDIS_PREFIX: 'ready:', REDIS_DURABILITY: 'none', TRADING_WORKERS: '1' }, 30_000);
    try {
      expect((await fetch(`${hub.url}/readyz`)).status).toBe(200);
      process.kill(redis.child.pid!, 'SIGSTOP');
      for (let i = 0; i < 3; i++) {
        const began = performance.now();
        const r = await fetch(`${hub.url}/readyz`);
        const ms = performance.now() - began;
        expect(r.status).toBe(503);
        expect(ms).toBeLessThan(2000);
      }
      process.kill(redis.child.pid!, 'SIGCONT');
      await expect.poll(async () => (await fetch(`${hub.url}/readyz`)).status, { timeout: 10_000 }).toBe(200);
    } finally {
      process.kill(redis.child.pid!, 'SIGCONT');
      await hub.stop('SIGKILL');
      await redis.kill();
    }
  });

  it('SIGTERM with Redis gone: the process exits within SHUTDOWN_GRACE_MS, non-zero, naming the step it abandoned', { timeout: 60_000 }, async () => {
    const redis = await startRedisServer({ appendonly: false });
    const hub = await startHubProcess(
      { ...AUTH_TEST_ENV, DATA_DIR: tempDir('grace'), REDIS_URL: redis.url, REDIS_PREFIX: 'grace:', REDIS_DURABILITY: 'none', TRADING_WORKERS: '1', SHUTDOWN_GRACE_MS: '2000' },
      30_000,
    );
    await redis.kill();
    const began = Date.now();
    const code = await hub.stop('SIGTERM');
    const ms = Date.now() - began;
    expect(ms).toBeLessThan(2000 + 1500);
    expect(code).not.toBe(0);
    expect(code).not.toBeNull();
    expect(hub.output()).toMatch(/exiting with work abandoned|stopped with work abandoned/);
  });
});
