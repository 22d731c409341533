import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Hub, Reply } from '../../src/hub/index.js';
import { inject } from '../support/inject.js';

let hub: Hub;
const items = new Map<string, string>();

beforeAll(() => {
  hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: mkdtempSync(join(tmpdir(), 'maru-web-')), shutdownGraceMs: 200 });
  const id = z.object({ id: z.string().regex(/^\w{1,8}$/) });
  const item = z.object({ id: z.string(), text: z.string() });
  hub
    .route({ method: 'GET', path: '/items/:id', params: id, response: item, handler: (ctx) => ({ id: ctx.params.id, text: items.get(ctx.params.id) ?? '' }) })
    .route({
      method: 'POST',
      path: '/items',
      body: { schema: z.strictObject({ id: z.string().max(8), text: z.string().max(100) }) },
      response: { 201: item },
      handler: (ctx) => {
        items.set(ctx.body.id, ctx.body.text);
        return Reply.json(ctx.body, 201);
      },
    })
    .route({
      method: 'PUT',
      path: '/items/:id',
      params: id,
      body: { schema: z.strictObject({ text: z.string() }) },
      response: item,
      handler: (ctx) => {
        items.set(ctx.params.id, ctx.body.text);
        return { id: ctx.params.id, text: ctx.body.text };
      },
    })
    .route({ method: 'DELETE', path: '/items/:id', params: id, handler: (ctx) => void items.delete(ctx.params.id) })
    .route({ method: 'GET', path: '/sum', query: z.object({ a: z.coerce.number().int(), b: z.coerce.number().int() }), response: z.object({ sum: z.number() }), handler: (ctx) => ({ sum: ctx.query.a + ctx.query.b }) });
});
afterAll(() => hub.stop());

describe('routes declared with hub.route', () => {
  it('one declaration per route: validation, statuses and documentation', async () => {
    expect((await inject(hub, 'POST', '/items', { id: 'a', text: '하나' })).status).toBe(201);
    expect((await inject(hub, 'GET', '/items/a')).body).toEqual({ id: 'a', text: '하나' });
    expect((await inject(hub, 'PUT', '/items/a', { text: '둘' })).body).toEqual({ id: 'a', text: '둘' });
    expect((await inject(hub, 'DELETE', '/items/a')).status).toBe(204);
    expect((await inject(hub, 'GET', '/sum?a=2&b=3')).body).toEqual({ sum: 5 });
    expect((await inject(hub, 'GET', '/sum?a=x&b=3')).body.error.code).toBe('invalid_query');
    expect((await inject(hub, 'POST', '/items', { id: 'toolongname', text: '' })).body.error.code).toBe('invalid_body');
    expect((await inject(hub, 'PATCH', '/items/a')).status).toBe(405);
    const doc = (await inject(hub, 'GET', '/openapi.json')).body;
    expect(Object.keys(doc.paths['/items/{id}'])).toEqual(['get', 'put', 'delete']);
    expect(doc.paths['/items'].post.responses['201'].content['application/json'].schema.required).toEqual(['id', 'text']);
  });
});
