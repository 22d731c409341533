/**
 * A client that goes away at any step of a request ends nothing but its own request. For every
 * operation of the hub's own /openapi.json that reads a body (JSON and multipart), with no
 * credential, a forged one and a valid one, a raw socket sends the request's headers and part of
 * its body (nothing, half, all of it) and closes at a spread of moments: before the credential is
 * resolved, while the body still arrives, during the guards, the Idempotency-Key's look-up, an
 * upload's inspection and the handler. On Redis the store sits behind a relay that delays every
 * round trip, so each store step of the pipeline lasts long enough to be cut inside. Afterwards the
 * process still runs, answers, and logged no unhandled rejection. LMDB and Redis.
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { SignJWT } from 'jose';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { casesFor, concretePath, plausible, type Op } from '../support/openapi-cases.js';
import { startHubProcess, tempDir, type HubProcess } from '../support/process.js';
import { latencyProxy } from '../support/proxy.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const sso = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const stranger = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const SSO_ENV = {
  SSO_PUBLIC_KEY: sso.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  SSO_AUDIENCE: 'maru',
  BANKING_WEBHOOK_SECRET: 'abort-webhook-secret-0123456789',
  PAYMENT_PEERS: 'embedded',
  TRADING_WORKERS: '1',
};
const ssoToken = (key: typeof sso.privateKey) =>
  new SignJWT({}).setProtectedHeader({ alg: 'ES256' }).setSubject('abort-user').setAudience('maru').setExpirationTime('1h').sign(key);

/** The bytes of a request body the operation takes (JSON, or multipart with a small PDF per file field). */
function bodyOf(op: Op): { type: string; bytes: Buffer } {
  const content = op.requestBody!.content;
  const multipart = content['multipart/form-data']?.schema;
  if (multipart) {
    const boundary = `b${randomBytes(8).toString('hex')}`;
    const parts: Buffer[] = [];
    for (const [name, s] of Object.entries(multipart.properties ?? {})) {
      const file = s.format === 'binary' || s.items?.format === 'binary';
      const head = file
        ? `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${name}.pdf"\r\nContent-Type: application/pdf\r\n\r\n`
        : `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n`;
      parts.push(Buffer.from(head), file ? Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(4096), Buffer.from('\n%%EOF\n')]) : Buffer.from('1'), Buffer.from('\r\n'));
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    return { type: `multipart/form-data; boundary=${boundary}`, bytes: Buffer.concat(parts) };
  }
  const schema = content['application/json']?.schema;
  const body = Object.fromEntries(Object.entries(schema?.properties ?? {}).map(([k, s]) => [k, plausible(s)]));
  return { type: 'application/json', bytes: Buffer.from(JSON.stringify(body)) };
}

/** How much of the body is sent before the socket closes. */
const CUTS = [
  ['headers only', () => 0],
  ['half the body', (n: number) => Math.floor(n / 2)],
  ['the whole body', (n: number) => n],
] as const;
/** How long after the last byte the socket closes, ms (0: in the same tick). */
const DELAYS = [0, 3, 12, 40, 90];

function cutRequest(port: number, method: string, path: string, headers: Record<string, string>, body: Buffer, sent: number, delayMs: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    socket.on('close', () => resolve());
    socket.on('connect', () => {
      const head = [`${method} ${path} HTTP/1.1`, 'host: 127.0.0.1', `content-length: ${body.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n');
      socket.write(Buffer.concat([Buffer.from(head), body.subarray(0, sent)]));
      setTimeout(() => socket.destroy(), delayMs);
    });
  });
}

async function inBatches<T>(items: T[], width: number, f: (t: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await f(items[next++]!);
    }),
  );
}

function suite(store: 'lmdb' | 'redis') {
  let hub: HubProcess;
  let proxy: { port: number; close(): Promise<void> } | undefined;
  const prefix = uniquePrefix('abort');
  let operator = '';
  const available = store === 'lmdb' || redis.available;

  beforeAll(async () => {
    if (!available) return;
    const env: Record<string, string> = { ...AUTH_TEST_ENV, ...SSO_ENV, DATA_DIR: tempDir(`abort-${store}`) };
    if (store === 'redis') {
      const url = new URL(redis.url);
      proxy = await latencyProxy({ host: url.hostname, port: Number(url.port || 6379) }, 4);
      Object.assign(env, { REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_PREFIX: prefix, REDIS_DURABILITY: 'none' });
    }
    hub = await startHubProcess(env, 40_000);
    const login = await fetch(`${hub.url}/api/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ user: 'admin', password: TEST_ADMIN_PASSWORD }) });
    operator = ((await login.json()) as { token: string }).token;
  }, 60_000);
  afterAll(async () => {
    await hub?.stop();
    await proxy?.close();
    if (store === 'redis' && redis.available) await deletePrefix(redis.url, prefix);
  });

  it.skipIf(!available)(`${store}: every body-reading operation, cut at every step, with each credential: the process lives and logs no unhandled rejection`, { timeout: 240_000 }, async () => {
    const doc = (await (await fetch(`${hub.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
    const valid = await ssoToken(sso.privateKey);
    const forgedSso = await ssoToken(stranger.privateKey);
    const forgedBearer = `mt_${randomBytes(32).toString('base64url')}`;
    const jobs: (() => Promise<void>)[] = [];
    let operations = 0;
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (!op.requestBody) continue;
        operations++;
        const path = template.replace(/\{(\w+)\}/g, 'x1');
        const isSso = op.security?.some((s) => 'sso' in s) ?? false;
        const credentials: Record<string, string>[] = [
          {},
          { authorization: `Bearer ${isSso ? forgedSso : forgedBearer}` },
          { authorization: `Bearer ${isSso ? valid : operator}` },
        ];
        for (const credential of credentials) {
          for (const [, cut] of CUTS) {
            for (const delay of DELAYS) {
              jobs.push(() => {
                const { type, bytes } = bodyOf(op);
                const headers = { 'content-type': type, 'idempotency-key': randomUUID(), ...credential };
                return cutRequest(hub.port, method.toUpperCase(), path, headers, bytes, cut(bytes.length), delay);
              });
            }
          }
        }
      }
    }
    expect(operations).toBeGreaterThan(40);
    await inBatches(jobs, 24, (job) => job());
    // a moment for anything still running after its client left
    await new Promise((r) => setTimeout(r, 500));
    expect(hub.child.exitCode, hub.output().slice(-3000)).toBeNull();
    const health = await fetch(`${hub.url}/healthz`);
    expect(health.status).toBe(200);
    const who = await fetch(`${hub.url}/api/auth/me`, { headers: { authorization: `Bearer ${operator}` } });
    expect(who.status).toBe(200);
    const unhandled = hub.output().split('\n').filter((l) => l.includes('unhandled rejection'));
    expect(unhandled, unhandled.slice(0, 3).join('\n')).toEqual([]);
    console.log(`${store}: ${jobs.length} cut requests over ${operations} operations`);
  });

  it.skipIf(!available)(`${store}: bad input against every operation while sockets flood and clients cut requests: no 5xx, the process lives`, { timeout: 300_000 }, async () => {
    const doc = (await (await fetch(`${hub.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
    const valid = await ssoToken(sso.privateKey);
    // floods on /ws and /yjs while the requests run: each socket is closed 1008 past its budget
    const closes: number[] = [];
    const flood = async (path: string, frame: () => string | Buffer) => {
      for (let round = 0; round < FLOOD_ROUNDS; round++) {
        const ws = new WebSocket(`${hub.url.replace('http', 'ws')}${path}?access_token=${operator}`);
        await new Promise<void>((resolve) => {
          ws.on('error', () => resolve());
          ws.on('close', (code) => (closes.push(code), resolve()));
          ws.on('open', () => {
            for (let i = 0; i < 1500 && ws.readyState === WebSocket.OPEN; i++) ws.send(frame());
          });
        });
      }
    };
    const floods = Promise.all([
      flood('/ws', () => JSON.stringify({ type: 'ping' })),
      flood('/ws', () => 'garbage'),
      flood('/ws', () => JSON.stringify({ type: 'subscribe', topic: `md:${randomBytes(4).toString('hex')}` })),
      flood('/yjs/fuzz-doc', () => randomBytes(12)),
    ]);
    const statuses = new Map<number, number>();
    const fives: string[] = [];
    let requests = 0;
    let cut = 0;
    let seed = 1;
    const jobs: (() => Promise<void>)[] = [];
    for (const [template, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const isStream = Object.keys((op.responses['200'] as { content?: object } | undefined)?.content ?? {}).includes('text/event-stream');
        const isSso = op.security?.some((s) => 'sso' in s) ?? false;
        const credentials: Record<string, string>[] = [{}, { authorization: 'Bearer not-a-token' }, { authorization: `Bearer ${isSso ? valid : operator}` }];
        const cases = casesFor(template, method, op, seed++);
        cases.forEach((c, i) => {
          if (isStream && c.path === concretePath(template)) return;
          const credential = credentials[i % credentials.length]!;
          // every seventh request is cut by its client after a few milliseconds
          const cutAfter = i % 7 === 3 ? (i % 5) * 4 : undefined;
          jobs.push(async () => {
            const body = c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
            const headers = { 'content-type': 'application/json', ...credential, ...c.headers };
            const answer = await send(hub.port, method.toUpperCase(), c.path, headers, body, cutAfter);
            requests++;
            if (answer === undefined) return void cut++;
            const { status, code } = answer;
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            // a 503 is an answer only when it says the store or a queue is busy (a loaded machine); anything else is a fault
            if (status >= 500 && !(status === 503 && OVERLOAD.has(code ?? ''))) fives.push(`${method.toUpperCase()} ${c.path.slice(0, 80)} (${c.what}) -> ${status} ${code}`);
          });
        });
      }
    }
    await inBatches(jobs, 16, (job) => job());
    await floods;
    expect(fives).toEqual([]);
    expect(closes.filter((c) => c === 1008).length).toBeGreaterThan(0);
    expect(hub.child.exitCode, hub.output().slice(-3000)).toBeNull();
    expect((await fetch(`${hub.url}/healthz`)).status).toBe(200);
    const unhandled = hub.output().split('\n').filter((l) => l.includes('unhandled rejection'));
    expect(unhandled, unhandled.slice(0, 3).join('\n')).toEqual([]);
    console.log(`${store}: fuzz ${requests} requests (${cut} cut by their client), statuses ${JSON.stringify(Object.fromEntries(statuses))}, ${closes.length} flooding sockets closed (${closes.filter((c) => c === 1008).length} with 1008)`);
  });
}

/** Flooding sockets opened one after another per kind of frame (FUZZ_FLOODS, default 3). */
const FLOOD_ROUNDS = Number(process.env.FUZZ_FLOODS ?? 3);

/** The 503 codes of a loaded machine (the store slower than its time-out, a full queue): answers, not faults. */
const OVERLOAD = new Set(['store_unavailable', 'busy', 'queue_full']);

/**
 * One request over its own connection, resolving with its status and error code; `cutAfter` ms:
 * the client closes it then (resolves undefined).
 */
function send(port: number, method: string, path: string, headers: Record<string, string>, body: string | undefined, cutAfter?: number): Promise<{ status: number; code?: string } | undefined> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers: { ...headers, ...(body !== undefined && !headers['content-length'] ? { 'content-length': String(Buffer.byteLength(body)) } : {}) }, agent: false });
    const timer = setTimeout(() => req.destroy(), cutAfter ?? 5000);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.length < 16 && chunks.push(c));
      res.on('end', () => {
        clearTimeout(timer);
        let code: string | undefined;
        try {
          code = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.error?.code;
        } catch {
          code = undefined;
        }
        resolve({ status: res.statusCode!, ...(code ? { code } : {}) });
      });
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => (clearTimeout(timer), resolve(undefined)));
    req.on('close', () => setTimeout(() => resolve(undefined), 0));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

describe('a client that goes away mid-request, on LMDB', () => suite('lmdb'));
describe('a client that goes away mid-request, on Redis behind a slow link', () => suite('redis'));
