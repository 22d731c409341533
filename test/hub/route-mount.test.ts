import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Hub, Reply } from '../../src/hub/index.js';
import { route } from '../../src/hub/declare.js';
import { inject } from '../support/inject.js';

/**
 * hub.mount(prefix, table): a service's route table as data under its prefix. It serves and documents
 * each route exactly as one declared with its full path, and answers the table with the full paths
 * (the values here; the types are checked by web/common/api.type-test.ts).
 */

const newHub = () => new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 1024, webDir: mkdtempSync(join(tmpdir(), 'maru-web-')), shutdownGraceMs: 200 });
const notes = new Map<string, string>();
const table = () => ({
  list: route({ method: 'GET', path: '/', response: z.object({ count: z.number() }), handler: () => ({ count: notes.size }) }),
  one: route({ method: 'GET', path: '/notes/:id', params: z.object({ id: z.string().regex(/^\w{1,8}$/) }), response: z.object({ id: z.string(), text: z.string() }), handler: (ctx) => ({ id: ctx.params.id, text: notes.get(ctx.params.id) ?? '' }) }),
  add: route({
    method: 'POST',
    path: '/notes',
    body: { schema: z.strictObject({ id: z.string().max(8), text: z.string().max(100) }) },
    response: { 201: z.object({ id: z.string(), text: z.string() }) },
    handler: (ctx) => {
      notes.set(ctx.body.id, ctx.body.text);
      return Reply.json(ctx.body, 201);
    },
  }),
});

let mounted: Hub;
let full: Hub;
let answer: ReturnType<Hub['mount']>;

beforeAll(() => {
  mounted = newHub();
  answer = mounted.mount('/api/notes', table());
  mounted.mount('', { health: route({ method: 'GET', path: '/notes-health', handler: () => ({ ok: true }) }) });
  full = newHub();
  for (const r of Object.values(table())) full.route({ ...r, path: r.path === '/' ? '/api/notes' : `/api/notes${r.path}` });
  full.route({ method: 'GET', path: '/notes-health', handler: () => ({ ok: true }) });
});
afterAll(async () => {
  await mounted.stop();
  await full.stop();
});

describe('hub.mount: a route table as data under its prefix', () => {
  it('serves each route at prefix + path, a root table at its own paths, and refuses as any route does', async () => {
    expect((await inject(mounted, 'POST', '/api/notes/notes', { id: 'a', text: '메모' })).status).toBe(201);
    expect((await inject(mounted, 'GET', '/api/notes/notes/a')).body).toEqual({ id: 'a', text: '메모' });
    expect((await inject(mounted, 'GET', '/api/notes')).body).toEqual({ count: 1 });
    expect((await inject(mounted, 'GET', '/notes-health')).body).toEqual({ ok: true });
    expect((await inject(mounted, 'GET', '/notes/a')).status).toBe(404);
    expect((await inject(mounted, 'POST', '/api/notes/notes', { id: 'far-too-long', text: '' })).body.error.code).toBe('invalid_body');
    expect((await inject(mounted, 'GET', '/api/notes/notes/a%2Fb')).body.error.code).toBe('invalid_params');
  });

  it('answers the table with the full paths, and documents it as routes declared with them', async () => {
    expect(Object.fromEntries(Object.entries(answer).map(([k, r]) => [k, `${r.method} ${r.path}`]))).toEqual({
      list: 'GET /api/notes',
      one: 'GET /api/notes/notes/:id',
      add: 'POST /api/notes/notes',
    });
    const a = await inject(mounted, 'GET', '/openapi.json');
    const b = await inject(full, 'GET', '/openapi.json');
    expect(a.text).toBe(b.text);
  });

  it('refuses a prefix that is not /segment[/segment...]', () => {
    for (const bad of ['/', 'api', '/api/', '/api/*']) expect(() => newHub().mount(bad, table()), bad).toThrow(/route prefix/);
  });
});
