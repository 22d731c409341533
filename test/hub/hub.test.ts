import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AppError } from '../../src/errors.js';
import { Hub, Reply, type SseStream } from '../../src/hub/index.js';
import { waitFor } from '../support/wait.js';
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

describe('hub HTTP', () => {
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

  it('answers a request from a socket exactly as an injected one (same pipeline), with the peer address', async () => {
    const overSocket = await fetch(`${base}/echo/7`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":5}' });
    const injected = await hub.inject('POST', '/echo/7', { headers: { 'content-type': 'application/json' }, body: '{"text":5}' });
    expect(overSocket.status).toBe(injected.status);
    expect(await overSocket.json()).toEqual(injected.body);
    const names = (h: Iterable<string>) => [...h].filter((k) => !['date', 'content-length', 'uwebsockets', 'x-request-id'].includes(k)).sort();
    expect(names(overSocket.headers.keys())).toEqual(names(Object.keys(injected.headers)));
    const ok = await fetch(`${base}/guarded`, { headers: { authorization: 'Bearer ok' } });
    expect(await ok.json()).toEqual({ user: 'u1', from: expect.stringMatching(/127\.0\.0\.1$/) });
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
    await waitFor(() => flood?.closed === true, 5000, 'the flooded stream to close');
    expect(flood!.dropped).toBeGreaterThan(0);
    socket.destroy();
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
