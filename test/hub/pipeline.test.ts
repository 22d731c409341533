/**
 * The request pipeline (routing, validation, credentials, guards, error mapping, headers) through
 * hub.inject: in process, no port. What needs a real socket (chunked bodies, keep-alive, streams,
 * WebSockets) is in hub.test.ts.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { Hub, Reply } from '../../src/hub/index.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { inject } from '../support/inject.js';
import { tempDir } from '../support/process.js';

let hub: Hub;
let store: Store;
let ready = true;
const clock = new ManualClock(1_000_000_000_000);
let handlerRuns = 0;

beforeAll(async () => {
  const web = tempDir('pipeline-web');
  mkdirSync(join(web, 'assets'));
  writeFileSync(join(web, 'assets', 'app.js'), 'console.log("hi")');
  writeFileSync(join(web, 'demo.html'), '<!doctype html><title>demo</title>');
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: web, shutdownGraceMs: 200 });
  store = await openLmdbStore({ path: tempDir('pipeline-store') });
  hub.useState(store, clock);
  hub.authenticate(async (token) => (token === 'staff-token' ? { id: 's1', name: 'staff', roles: ['staff'], kind: 'account' } : undefined));
  hub
    .route({ method: 'GET', path: '/sum', query: z.object({ a: z.coerce.number().int(), b: z.coerce.number().int() }), response: z.object({ sum: z.number() }), handler: (ctx) => ({ sum: ctx.query.a + ctx.query.b }) })
    .route({
      method: 'POST',
      path: '/echo/:id',
      params: z.object({ id: z.string().regex(/^\d+$/) }),
      body: { schema: z.object({ text: z.string().max(2000) }) },
      response: { 201: z.object({ id: z.string(), text: z.string() }) },
      handler: (ctx) => Reply.json({ id: ctx.params.id, text: ctx.body.text }, 201),
    })
    .route({
      method: 'GET',
      path: '/teapot',
      handler: () => {
        throw new AppError('conflict', 'busy', 'the pot is busy', { until: 3 });
      },
    })
    .route({
      method: 'GET',
      path: '/boom',
      handler: () => {
        throw new Error('secret internals');
      },
    })
    // a handler bug: a value JSON cannot hold (BigInt), returned at once or later
    .route({ method: 'GET', path: '/bigint', handler: () => ({ n: 1n }) as never })
    .route({ method: 'GET', path: '/bigint-later', handler: async () => ({ n: 1n }) as never })
    .route({
      method: 'GET',
      path: '/later',
      handler: async () => {
        await new Promise((r) => setImmediate(r));
        throw new AppError('not_found', 'gone', 'not any more');
      },
    })
    .route({
      method: 'GET',
      path: '/guarded',
      guards: [
        (ctx) => {
          if (ctx.headers['x-key'] !== 'ok') throw new AppError('forbidden', 'no_key', 'key required');
          ctx.state.user = 'u1';
        },
      ],
      handler: (ctx) => ({ user: ctx.state.user, from: ctx.remoteAddress }),
    })
    .route({
      method: 'POST',
      path: '/staff',
      auth: { roles: ['staff'] },
      body: { schema: z.object({ n: z.number() }) },
      handler: (ctx) => {
        handlerRuns++;
        return { by: ctx.identity!.id, n: ctx.body.n };
      },
    })
    .route({ method: 'POST', path: '/limited', guards: [hub.rateLimit('pipeline-test', { limit: 2, windowMs: 10_000, key: (ctx) => ctx.headers['x-client'] })], handler: () => ({ ok: true }) });
  hub.sse({ path: '/events', query: z.object({ n: z.coerce.number().int().min(1).max(5) }), open: (_ctx, stream) => void stream.send({ event: 'tick', data: 1 }) });
  hub.page('/demo', '/demo.html', { title: 'Demo', description: 'a page' });
  hub.page('/demo/:slug', '/demo.html', { title: 'Demo item', description: 'a page at a pattern', params: z.object({ slug: z.string().regex(/^[a-z]+$/) }) });
  hub.ready('flag', async () => {
    if (!ready) throw new Error('flag down');
  });
});
afterAll(async () => {
  await hub.stop();
  await store.close();
});

describe('hub.inject: the request pipeline without a port', () => {
  it('validates and parses the query string, refusing malformed percent-encoding', async () => {
    expect(await inject(hub, 'GET', '/sum?a=2&b=40')).toMatchObject({ status: 200, body: { sum: 42 } });
    const bad = await inject(hub, 'GET', '/sum?a=2&b=4.5');
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_query', message: expect.stringMatching(/^b:/), details: { issues: [{ field: 'b' }] } });
    expect((await inject(hub, 'GET', '/sum?a=%E0%A4%A&b=1')).body.error.code).toBe('invalid_query');
  });

  it('reads JSON bodies with path parameters, and answers 415, 413, 400 for wrong ones', async () => {
    expect(await inject(hub, 'POST', '/echo/7', { text: '안녕' }, { 'content-type': 'application/json; charset=utf-8' })).toMatchObject({ status: 201, body: { id: '7', text: '안녕' } });
    const wrongType = await inject(hub, 'POST', '/echo/7', 'x', { 'content-type': 'text/plain' });
    expect(wrongType).toMatchObject({ status: 415, body: { error: { code: 'unsupported_media_type' } } });
    const tooBig = await inject(hub, 'POST', '/echo/7', { text: 'x'.repeat(2000) });
    expect(tooBig).toMatchObject({ status: 413, body: { error: { code: 'payload_too_large', details: { limit: 1024 } } } });
    expect((await inject(hub, 'POST', '/echo/7', '{"text":')).body.error.code).toBe('invalid_json');
    expect((await inject(hub, 'POST', '/echo/7', '{"text":5}')).body.error.code).toBe('invalid_body');
    expect((await inject(hub, 'POST', '/echo/x', { text: 'a' })).body.error.code).toBe('invalid_params');
    expect((await inject(hub, 'POST', '/echo/7')).body.error).toMatchObject({ code: 'invalid_body', message: 'a request body is required' });
  });

  it('maps AppError to its status, from synchronous and asynchronous handlers, and hides internal errors', async () => {
    const teapot = await inject(hub, 'GET', '/teapot');
    expect(teapot).toMatchObject({ status: 409, body: { error: { code: 'busy', message: 'the pot is busy', details: { until: 3 } } } });
    expect(teapot.headers['cache-control']).toBe('no-store');
    expect(await inject(hub, 'GET', '/later')).toMatchObject({ status: 404, body: { error: { code: 'gone' } } });
    const boom = await inject(hub, 'GET', '/boom');
    expect(boom.status).toBe(500);
    expect(boom.body.error.code).toBe('internal');
    expect(boom.text).not.toContain('secret');
    // an answer that cannot be written as JSON is the server's fault: 500, and the hub goes on
    for (const path of ['/bigint', '/bigint-later']) {
      const r = await inject(hub, 'GET', path);
      expect(r.status, path).toBe(500);
      expect(r.body.error.code, path).toBe('internal');
    }
    expect((await inject(hub, 'GET', '/teapot')).status).toBe(409);
  });

  it('answers 404 and 405 with the error shape', async () => {
    expect(await inject(hub, 'GET', '/nowhere')).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } });
    const na = await inject(hub, 'DELETE', '/sum');
    expect(na.status).toBe(405);
    expect(na.headers.allow).toBe('GET, HEAD');
    expect((await inject(hub, 'GET', '/sum/%E0%A4')).status).toBe(404);
  });

  it('runs guards before the handler and gives the handler the caller address', async () => {
    expect((await inject(hub, 'GET', '/guarded')).status).toBe(403);
    expect((await hub.inject('GET', '/guarded', { headers: { 'x-key': 'ok' }, remoteAddress: '10.0.0.9' })).body).toEqual({ user: 'u1', from: '10.0.0.9' });
  });

  it('checks the credential first: without one, nothing of the request is read or run', async () => {
    const none = await inject(hub, 'POST', '/staff', '{"n":');
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await inject(hub, 'POST', '/staff', { n: 1 }, { authorization: 'Bearer nope' })).body.error.code).toBe('invalid_token');
    expect(handlerRuns).toBe(0);
    expect(await inject(hub, 'POST', '/staff', { n: 2 }, { authorization: 'Bearer staff-token' })).toMatchObject({ status: 200, body: { by: 's1', n: 2 } });
  });

  it('gives every answer a request id (echoing a sane incoming one) and the security headers', async () => {
    const a = await inject(hub, 'GET', '/healthz');
    expect(a.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-\d+$/);
    expect(a.headers['x-content-type-options']).toBe('nosniff');
    expect(a.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect((await inject(hub, 'GET', '/healthz', undefined, { 'x-request-id': 'abc-123' })).headers['x-request-id']).toBe('abc-123');
    expect((await inject(hub, 'GET', '/healthz', undefined, { 'x-request-id': 'bad id' })).headers['x-request-id']).not.toBe('bad id');
  });

  it('serves static files and pages with ETag and 304, and the page index', async () => {
    const r = await inject(hub, 'GET', '/assets/app.js');
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('text/javascript');
    expect((await inject(hub, 'GET', '/assets/app.js', undefined, { 'if-none-match': r.headers.etag! })).status).toBe(304);
    expect((await inject(hub, 'GET', '/demo')).text).toContain('<title>demo</title>');
    const pattern = await inject(hub, 'GET', '/demo/first');
    expect(pattern.headers['content-type']).toContain('text/html');
    expect((await inject(hub, 'GET', '/demo/second', undefined, { 'if-none-match': pattern.headers.etag! })).status).toBe(304);
    expect((await inject(hub, 'GET', '/demo/NOT_OK')).body.error).toMatchObject({ code: 'invalid_params', details: { issues: [{ field: 'slug' }] } });
    expect((await inject(hub, 'GET', '/pages', undefined, { accept: 'application/json' })).body.pages).toEqual([
      { path: '/demo', title: 'Demo', description: 'a page' },
      { path: '/demo/:slug', title: 'Demo item', description: 'a page at a pattern' },
    ]);
    const html = (await inject(hub, 'GET', '/pages')).text;
    expect(html).toContain('href="/demo"');
    expect(html).toContain('<code>/demo/:slug</code>');
    expect(html).not.toContain('href="/demo/:slug"');
  });

  it('reports readiness from its checks, and metrics per route', async () => {
    expect((await inject(hub, 'GET', '/readyz')).status).toBe(200);
    ready = false;
    const r = await inject(hub, 'GET', '/readyz');
    ready = true;
    expect(r.status).toBe(503);
    expect(r.body.error.details.checks.flag).toBe('flag down');
    await inject(hub, 'GET', '/sum?a=1&b=1');
    const text = (await inject(hub, 'GET', '/metrics')).text;
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/sum",status="200"\} \d+/);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toContain('nodejs_eventloop_lag_p99_seconds');
    expect(text).toContain('websocket_connections_open');
  });

  it('refuses a bad query before opening a stream, and answers a stream with its first chunk', async () => {
    expect((await inject(hub, 'GET', '/events?n=9')).status).toBe(400);
    const s = await inject(hub, 'GET', '/events?n=1');
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toContain('text/event-stream');
    expect(s.text).toContain('retry: 3000');
  });

  it('hub.rateLimit counts in the hub store on the hub clock: 429 with Retry-After, the next window passes', async () => {
    const hit = (client: string) => inject(hub, 'POST', '/limited', undefined, { 'x-client': client });
    expect((await hit('a')).status).toBe(200);
    expect((await hit('a')).status).toBe(200);
    const refused = await hit('a');
    expect(refused).toMatchObject({ status: 429, body: { error: { code: 'rate_limited', details: { limit: 2, window_s: 10 } } } });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await hit('b')).status).toBe(200);
    clock.advance(10_000);
    expect((await hit('a')).status).toBe(200);
    expect(() => hub.rateLimit('bad', { limit: 0, windowMs: 1 })).toThrow(RangeError);
  });
});
