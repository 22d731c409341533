import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../src/errors.js';
import { Hub, Reply, type SseStream } from '../../src/hub/index.js';
import { connectTopics } from '../support/ws.js';

let hub: Hub;
let base: string;
let ready = true;
const streams: SseStream[] = [];
let flood: SseStream | undefined;

beforeAll(async () => {
  const web = mkdtempSync(join(tmpdir(), 'maru-web-'));
  mkdirSync(join(web, 'assets'));
  writeFileSync(join(web, 'assets', 'app.js'), 'console.log("hi")');
  writeFileSync(join(web, 'demo.html'), '<!doctype html><title>demo</title>');
  hub = new Hub({
    logger: pino({ level: 'silent' }),
    bodyLimit: 1024,
    webDir: web,
    shutdownGraceMs: 1000,
    sse: { heartbeatMs: 50 },
  });
  hub.route({
    method: 'GET',
    path: '/sum',
    query: z.object({ a: z.coerce.number().int(), b: z.coerce.number().int() }),
    handler: (ctx) => ({ sum: ctx.query.a + ctx.query.b }),
  });
  hub.route({
    method: 'POST',
    path: '/echo/:id',
    params: z.object({ id: z.string().regex(/^\d+$/) }),
    body: { schema: z.object({ text: z.string().max(2000) }) },
    handler: (ctx) => Reply.json({ id: ctx.params.id, text: ctx.body.text }, 201),
  });
  hub.route({
    method: 'GET',
    path: '/teapot',
    handler: () => {
      throw new AppError('conflict', 'busy', 'the pot is busy', { until: 3 });
    },
  });
  hub.route({
    method: 'GET',
    path: '/boom',
    handler: () => {
      throw new Error('secret internals');
    },
  });
  hub.route({
    method: 'GET',
    path: '/guarded',
    guards: [
      (ctx) => {
        if (ctx.headers.authorization !== 'Bearer ok') throw new AppError('unauthorized', 'unauthorized', 'token required');
        ctx.state.user = 'u1';
      },
    ],
    handler: (ctx) => ({ user: ctx.state.user, from: ctx.remoteAddress }),
  });
  hub.sse({
    path: '/events',
    query: z.object({ n: z.coerce.number().int().min(1).max(5) }),
    open: (ctx, stream) => {
      streams.push(stream);
      for (let i = 1; i <= ctx.query.n; i++) stream.send({ event: 'tick', id: i, data: { i, last: stream.lastEventId ?? null } });
    },
  });
  hub.sse({
    path: '/flood',
    open: (_ctx, stream) => {
      flood = stream;
      const chunk = 'x'.repeat(4096);
      // odd events may be skipped (ticks); even ones must not be (they count against the backlog)
      for (let i = 0; i < 4000 && !stream.closed; i++) stream.send({ id: i, data: chunk }, { droppable: i % 2 === 1 });
    },
  });
  hub.topic({ name: 'news', policy: 'drop' });
  hub.topic({ name: 'money:*', policy: 'close' });
  hub.page('/demo', '/demo.html', { title: 'Demo', description: 'a page' });
  hub.page('/demo/:slug', '/demo.html', {
    title: 'Demo item',
    description: 'a page at a pattern',
    params: z.object({ slug: z.string().regex(/^[a-z]+$/) }),
  });
  hub.ready('flag', async () => {
    if (!ready) throw new Error('flag down');
  });
  const port = await hub.listen('127.0.0.1', 0);
  base = `http://127.0.0.1:${port}`;
});

afterAll(async () => {
  await hub.stop();
});

const json = async (res: Response) => ({ status: res.status, body: await res.json(), headers: res.headers });

describe('hub HTTP', () => {
  it('validates and parses the query string', async () => {
    expect(await json(await fetch(`${base}/sum?a=2&b=40`))).toMatchObject({ status: 200, body: { sum: 42 } });
    const bad = await json(await fetch(`${base}/sum?a=2&b=4.5`));
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_query');
    expect(bad.body.error.message).toMatch(/^b:/);
    expect(bad.body.error.details.issues[0].field).toBe('b');
  });

  it('refuses malformed percent-encoding with 400', async () => {
    const r = await json(await fetch(`${base}/sum?a=%E0%A4%A&b=1`));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_query');
  });

  it('reads JSON bodies with path parameters', async () => {
    const r = await fetch(`${base}/echo/7`, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ text: '안녕' }),
    });
    expect(await json(r)).toMatchObject({ status: 201, body: { id: '7', text: '안녕' } });
  });

  it('answers 415, 413, 400 for wrong bodies', async () => {
    const wrongType = await fetch(`${base}/echo/7`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
    expect((await json(wrongType)).body.error.code).toBe('unsupported_media_type');
    expect(wrongType.status).toBe(415);
    const tooBig = await fetch(`${base}/echo/7`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'x'.repeat(2000) }),
    });
    expect(tooBig.status).toBe(413);
    expect((await tooBig.json()).error).toMatchObject({ code: 'payload_too_large', details: { limit: 1024 } });
    const broken = await fetch(`${base}/echo/7`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":' });
    expect(broken.status).toBe(400);
    expect((await broken.json()).error.code).toBe('invalid_json');
    const wrongShape = await fetch(`${base}/echo/7`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":5}' });
    expect(wrongShape.status).toBe(400);
    expect((await wrongShape.json()).error.code).toBe('invalid_body');
    const badParam = await fetch(`${base}/echo/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"a"}' });
    expect(badParam.status).toBe(400);
    expect((await badParam.json()).error.code).toBe('invalid_params');
  });

  it('limits chunked bodies without a content-length too', async () => {
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 4; i++) c.enqueue(new TextEncoder().encode('{"text":"' + 'y'.repeat(400)));
        c.close();
      },
    });
    const r = await fetch(`${base}/echo/1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: chunks,
      duplex: 'half',
    } as RequestInit);
    expect(r.status).toBe(413);
  });

  it('maps AppError to its status and hides internal errors', async () => {
    const teapot = await json(await fetch(`${base}/teapot`));
    expect(teapot).toMatchObject({ status: 409, body: { error: { code: 'busy', message: 'the pot is busy', details: { until: 3 } } } });
    expect(teapot.headers.get('cache-control')).toBe('no-store');
    const boom = await json(await fetch(`${base}/boom`));
    expect(boom.status).toBe(500);
    expect(boom.body.error.code).toBe('internal');
    expect(JSON.stringify(boom.body)).not.toContain('secret');
  });

  it('answers 404 and 405 with the error shape', async () => {
    const nf = await json(await fetch(`${base}/nowhere`));
    expect(nf).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const na = await fetch(`${base}/sum`, { method: 'DELETE' });
    expect(na.status).toBe(405);
    expect(na.headers.get('allow')).toBe('GET, HEAD');
  });

  it('runs guards before the handler', async () => {
    expect((await fetch(`${base}/guarded`)).status).toBe(401);
    const ok = await fetch(`${base}/guarded`, { headers: { authorization: 'Bearer ok' } });
    expect(await ok.json()).toEqual({ user: 'u1', from: expect.stringMatching(/127\.0\.0\.1$/) });
  });

  it('gives every answer a request id, echoing a sane incoming one', async () => {
    const a = await fetch(`${base}/healthz`);
    expect(a.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-\d+$/);
    const b = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    expect(b.headers.get('x-request-id')).toBe('abc-123');
    const c = await fetch(`${base}/healthz`, { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(c.headers.get('x-request-id')).not.toBe('bad id with spaces');
  });

  it('serves static files and pages with ETag and 304', async () => {
    const r = await fetch(`${base}/assets/app.js`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/javascript');
    const etag = r.headers.get('etag')!;
    expect(etag).toMatch(/^".+"$/);
    const again = await fetch(`${base}/assets/app.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    const page = await fetch(`${base}/demo`);
    expect(await page.text()).toContain('<title>demo</title>');
    const index = await fetch(`${base}/pages`, { headers: { accept: 'application/json' } });
    expect((await index.json()).pages).toEqual([
      { path: '/demo', title: 'Demo', description: 'a page' },
      { path: '/demo/:slug', title: 'Demo item', description: 'a page at a pattern' },
    ]);
    const html = await (await fetch(`${base}/pages`)).text();
    expect(html).toContain('href="/demo"');
    // a pattern page is listed by its pattern, not as a link
    expect(html).toContain('<code>/demo/:slug</code>');
    expect(html).not.toContain('href="/demo/:slug"');
  });

  it('serves one built page at every path of a pattern, validating the parameter', async () => {
    const a = await fetch(`${base}/demo/first`);
    expect(a.status).toBe(200);
    expect(a.headers.get('content-type')).toContain('text/html');
    expect(await a.text()).toContain('<title>demo</title>');
    const etag = a.headers.get('etag')!;
    expect((await fetch(`${base}/demo/second`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const bad = await fetch(`${base}/demo/NOT_OK`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatchObject({ code: 'invalid_params', details: { issues: [{ field: 'slug' }] } });
  });

  it('answers HEAD with the GET length and keeps the keep-alive connection for the next request', async () => {
    const port = new URL(base).port;
    const text = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(port), '127.0.0.1');
      let data = '';
      sock.on('data', (d) => {
        data += d;
        // both answers arrived: the HEAD (no body) and the GET that followed on the same socket
        if ((data.match(/HTTP\/1\.1 200/g) ?? []).length === 2 && data.endsWith('}')) {
          sock.destroy();
          resolve(data);
        }
      });
      sock.on('error', reject);
      sock.on('close', () => resolve(data));
      sock.write('HEAD /sum?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n');
      setTimeout(() => sock.write('GET /sum?a=1&b=2 HTTP/1.1\r\nHost: x\r\n\r\n'), 100);
    });
    const [head, get] = text.split(/(?=HTTP\/1\.1 200)/);
    expect(head).toMatch(/content-length: 9\r\n/i);
    expect(head!.endsWith('\r\n\r\n')).toBe(true);
    expect(get).toContain('{"sum":3}');
  });

  it('reports readiness from its checks', async () => {
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    ready = false;
    const r = await json(await fetch(`${base}/readyz`));
    ready = true;
    expect(r.status).toBe(503);
    expect(r.body.error.details.checks.flag).toBe('flag down');
  });

  it('exposes Prometheus metrics per route', async () => {
    await fetch(`${base}/sum?a=1&b=1`);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/sum",status="200"\} \d+/);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('nodejs_eventloop_lag_p99_seconds');
    expect(text).toContain('websocket_connections_open');
  });
});

describe('hub SSE', () => {
  it('streams events with ids and hands over Last-Event-ID', async () => {
    const res = await fetch(`${base}/events?n=3`, { headers: { 'last-event-id': '41' } });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const reader = res.body!.getReader();
    let text = '';
    while ((text.match(/event: tick/g) ?? []).length < 3) text += new TextDecoder().decode((await reader.read()).value);
    expect(text).toContain('retry: 3000');
    expect(text).toContain('id: 3\nevent: tick\ndata: {"i":3,"last":"41"}\n\n');
    // heartbeat comments keep idle proxies from closing the stream
    while (!text.includes(': ping\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    const stream = streams.at(-1)!;
    const closed = new Promise<void>((r) => stream.onClose(r));
    await reader.cancel();
    await closed;
    expect(stream.closed).toBe(true);
  });

  it('skips droppable events for a client that does not read, and closes it past the backlog limit', async () => {
    const { port } = new URL(base);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.pause(); // never read: the kernel buffers fill and uWS reports backpressure
    socket.write('GET /flood HTTP/1.1\r\nHost: x\r\n\r\n');
    for (let i = 0; i < 200 && !flood?.closed; i++) await new Promise((r) => setTimeout(r, 25));
    expect(flood?.closed).toBe(true);
    expect(flood!.dropped).toBeGreaterThan(0);
    socket.destroy();
  });

  it('refuses a bad query before opening the stream', async () => {
    const r = await fetch(`${base}/events?n=9`);
    expect(r.status).toBe(400);
  });
});

describe('hub WebSocket topics', () => {
  const open = () => connectTopics(base);

  it('delivers published messages to subscribers of drop and close topics', async () => {
    const a = await open();
    await a.subscribe('news');
    await a.subscribe('money:u1');
    expect(hub.publish('news', { n: 1 })).toBe(1);
    expect(await a.next()).toEqual({ type: 'message', topic: 'news', data: { n: 1 } });
    expect(hub.publish('money:u1', { amount: 5 })).toBe(1);
    expect(await a.next()).toEqual({ type: 'message', topic: 'money:u1', data: { amount: 5 } });
    a.ws.send(JSON.stringify({ type: 'unsubscribe', topic: 'news' }));
    expect(await a.next()).toEqual({ type: 'unsubscribed', topic: 'news' });
    expect(hub.publish('news', { n: 2 })).toBe(0);
    a.ws.close();
  });

  it('disconnects a slow subscriber of a close topic with 1013 and skips it on a drop topic', async () => {
    const slow = await open();
    await slow.subscribe('money:slow');
    await slow.subscribe('news');
    const fast = await open();
    await fast.subscribe('news');
    const closed = new Promise<number>((r) => slow.ws.on('close', (code) => r(code)));
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const big = 'x'.repeat(8192);
    let sent = 0;
    for (let i = 0; i < 2000 && hub.topics.count('money:slow') > 0; i++) sent += hub.publish('money:slow', { i, big });
    expect(sent).toBeLessThan(2000); // the slow socket stopped being served
    // drop topics keep serving everyone else
    expect(hub.publish('news', { after: true })).toBeGreaterThanOrEqual(1);
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    // the 1013 close frame queues behind the unsent data; when uWS gives up on it the client sees 1006
    expect([1013, 1006]).toContain(await closed);
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toMatch(/websocket_messages_dropped_total\{policy="close"\} [1-9]/);
    fast.close();
  });

  it('answers unknown topics and garbage frames without closing', async () => {
    const a = await open();
    a.ws.send(JSON.stringify({ type: 'subscribe', topic: 'secret' }));
    expect(await a.next()).toMatchObject({ type: 'error', code: 'unknown_topic' });
    a.ws.send('not json');
    expect(await a.next()).toMatchObject({ type: 'error', code: 'invalid_frame' });
    a.ws.send(Buffer.from([1, 2, 3]));
    expect(await a.next()).toMatchObject({ type: 'error', code: 'invalid_frame' });
    a.ws.send(JSON.stringify({ type: 'ping' }));
    expect(await a.next()).toEqual({ type: 'pong' });
    a.ws.close();
  });
});

describe('hub extra socket endpoints', () => {
  it('registers a binary endpoint with path parameters, counts it, refuses bad parameters and closes it with 1001 on stop', async () => {
    const { default: WebSocket } = await import('ws');
    const web = mkdtempSync(join(tmpdir(), 'maru-web-'));
    const h = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: web, shutdownGraceMs: 100 });
    const echo = h.socket<{ room: string }>('/bin/:room', {
      upgrade: ([room]) => {
        if (!room || !/^[a-z]+$/.test(room)) throw new AppError('invalid', 'invalid_room', 'bad room');
        return { room };
      },
      open: (ws) => void ws.subscribe('room:' + ws.getUserData().room),
      message: (ws, msg) => echo.publish('room:' + ws.getUserData().room, new Uint8Array(msg.slice(0)), true),
    });
    const port = await h.listen('127.0.0.1', 0);
    const url = `ws://127.0.0.1:${port}/bin/`;
    const rejected = await new Promise<number>((res) => {
      const w = new WebSocket(url + 'BAD1');
      w.on('unexpected-response', (_q, r) => res(r.statusCode ?? 0));
      w.on('error', () => undefined);
    });
    expect(rejected).toBe(400);
    const a = new WebSocket(url + 'abc');
    const b = new WebSocket(url + 'abc');
    await Promise.all([a, b].map((w) => new Promise((r) => w.once('open', r))));
    const got = new Promise<Buffer>((r) => b.once('message', (d) => r(d as Buffer)));
    a.send(Buffer.from([7, 8, 9]));
    expect([...(await got)]).toEqual([7, 8, 9]);
    expect(await h.metrics.registry.metrics()).toMatch(/websocket_connections_open 2/);
    const closed = new Promise<number>((r) => a.once('close', (code) => r(code)));
    await h.stop();
    expect(await closed).toBe(1001);
  });
});
