import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Hub, Reply, type RouteDef } from '../../src/hub/index.js';
import { inject } from '../support/inject.js';

/** hub.group(prefix): routes declared below one prefix are the hub's routes at their full paths. */

const newHub = () => new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: mkdtempSync(join(tmpdir(), 'maru-web-')), shutdownGraceMs: 200 });
const items = new Map<string, string>();
const id = z.object({ id: z.string().regex(/^\w{1,8}$/) });
const item = z.object({ id: z.string(), text: z.string() });
/** The same routes, each with its path below /api/shop (the root of the group is `/`). */
const routes = (): RouteDef<any, any, any>[] => [
  { method: 'GET', path: '/', response: z.object({ count: z.number() }), handler: () => ({ count: items.size }) },
  { method: 'GET', path: '/items/:id', params: id, response: item, summary: 'one item', handler: (ctx) => ({ id: ctx.params.id, text: items.get(ctx.params.id) ?? '' }) },
  {
    method: 'POST',
    path: '/items',
    body: { schema: z.strictObject({ id: z.string().max(8), text: z.string().max(100) }) },
    auth: { roles: ['staff'], optional: true },
    response: { 201: item },
    handler: (ctx) => {
      items.set(ctx.body.id, ctx.body.text);
      return Reply.json(ctx.body, 201);
    },
  },
  { method: 'DELETE', path: '/items/:id', params: id, handler: (ctx) => void items.delete(ctx.params.id) },
];

let grouped: Hub;
let full: Hub;

beforeAll(() => {
  grouped = newHub();
  const shop = grouped.group('/api/shop');
  for (const r of routes()) shop.route(r);
  grouped.route({ method: 'GET', path: '/items', handler: () => ({ outside: true }) });
  full = newHub();
  for (const r of routes()) full.route({ ...r, path: r.path === '/' ? '/api/shop' : `/api/shop${r.path}` });
  full.route({ method: 'GET', path: '/items', handler: () => ({ outside: true }) });
});
afterAll(async () => {
  await grouped.stop();
  await full.stop();
});

describe('hub.group: routes under one prefix', () => {
  it('serves each route at prefix + path (`/` at the prefix itself), nothing at the bare path', async () => {
    expect((await inject(grouped, 'POST', '/api/shop/items', { id: 'a', text: '하나' })).status).toBe(201);
    expect((await inject(grouped, 'GET', '/api/shop/items/a')).body).toEqual({ id: 'a', text: '하나' });
    expect((await inject(grouped, 'GET', '/api/shop')).body).toEqual({ count: 1 });
    expect((await inject(grouped, 'GET', '/items')).body).toEqual({ outside: true });
    expect((await inject(grouped, 'GET', '/items/a')).status).toBe(404);
    expect((await inject(grouped, 'PATCH', '/api/shop/items/a')).status).toBe(405);
    expect((await inject(grouped, 'POST', '/api/shop/items', { id: 'toolongname', text: '' })).body.error.code).toBe('invalid_body');
    expect((await inject(grouped, 'DELETE', '/api/shop/items/a')).status).toBe(204);
  });

  it('documents the routes in /openapi.json exactly as routes declared with their full paths', async () => {
    const a = await inject(grouped, 'GET', '/openapi.json');
    const b = await inject(full, 'GET', '/openapi.json');
    expect(a.text).toBe(b.text);
    expect(Object.keys(a.body.paths)).toEqual(['/healthz', '/readyz', '/metrics', '/openapi.json', '/pages', '/api/shop', '/api/shop/items/{id}', '/api/shop/items', '/items']);
    expect(grouped.api.routes().map((r) => `${r.method} ${r.path}`)).toContain('DELETE /api/shop/items/:id');
  });

  it('refuses a prefix that is not /segment[/segment...] and a path that does not start with /', () => {
    for (const bad of ['', '/', 'api', '/api/', '/api//x', '/api/*']) expect(() => newHub().group(bad), bad).toThrow(/route prefix/);
    expect(() => newHub().group('/api').route({ method: 'GET', path: 'x', handler: () => ({}) })).toThrow(/must start with \//);
  });
});
