import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openApiPath, responsesOf } from '../../src/hub/openapi.js';
import { AUTH_TEST_ENV } from '../support/auth.js';
import { call, get } from '../support/http.js';
import { tempDir } from '../support/process.js';

/** Route modules whose every route declares its response schema (the rest are listed, not failed). */
const DECLARED = [
  '/healthz', '/readyz', '/openapi.json', '/pages', '/api/md/',
  // identity, ticketing, rental intake and review, conversation, coaching, payment relay
  '/api/auth/', '/api/partner/', '/api/shows', '/api/reservations', '/api/mticket/', '/api/checkin', '/api/tickets/',
  '/api/rental/', '/api/subscriptions', '/api/uploads/', '/api/mail', '/api/chat', '/api/referral', '/api/shareholder',
  '/api/coach/', '/api/token/',
  // reward plan
  '/api/program/',
  '/api/reward/', '/stats', '/maturity', '/member', '/work', '/exchange', '/culture', '/declare', '/spec',
];
/** Routes whose answer is not JSON (an image, a stored document): nothing to declare as a JSON schema. */
const NOT_JSON = ['GET /api/mticket/:qrCode/qr.png', 'GET /api/uploads/:subId/:filename'];

let maru: Maru;
let doc: any;

beforeAll(async () => {
  maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('openapi'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), {
    logger: pino({ level: 'silent' }),
  });
  doc = (await get(maru.url, '/openapi.json')).body;
});
afterAll(() => maru?.stop());

describe('/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('holds every registered route, and describes the error shape, SSE streams and WebSocket endpoints', () => {
    const routes = maru.hub.api.routes();
    expect(routes.length).toBeGreaterThan(40);
    const missing = routes.filter((r) => !doc.paths[openApiPath(r.path)]?.[r.method.toLowerCase()]).map((r) => `${r.method} ${r.path}`);
    expect(missing).toEqual([]);
    expect(doc.components.schemas.Error.properties.error.required).toEqual(['code', 'message']);
    const stream = doc.paths['/api/program/stream'].get;
    expect(Object.keys(stream.responses['200'].content)).toEqual(['text/event-stream']);
    expect(stream.responses['200'].description).toMatch(/Last-Event-ID/);
    expect(doc.info.description).toMatch(/`\/ws`: JSON topics/);
    expect(doc.info.description).toMatch(/`\/yjs\/:slug`/);
    const checkin = doc.paths['/api/checkin'].post;
    expect(Object.keys(checkin.responses)).toEqual(expect.arrayContaining(['400', '401', '413', '415']));
    expect(checkin.requestBody.content['application/json'].schema.properties.code).toMatchObject({ type: 'string' });
    expect(doc.paths['/api/md/doc/{slug}'].get.parameters[0]).toMatchObject({ name: 'slug', in: 'path', required: true });
  });

  it('lists every route of docs/api.md', () => {
    const md = readFileSync('docs/api.md', 'utf8');
    const listed = [...md.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| (\/[^\s|?]*)[^\s|]* \|/gm)].map((m) => [m[1]!, m[2]!] as const);
    expect(listed.length).toBeGreaterThan(20);
    // a path is the same route whatever its parameters are named (:ref in the code, :receiptNo in the prose)
    const shape = (p: string) => p.replace(/\{[^}]+\}/g, '{}');
    const byShape = new Map(Object.entries(doc.paths as Record<string, Record<string, unknown>>).map(([p, ops]) => [shape(p), ops]));
    const absent = listed.filter(([method, path]) => path !== '/assets/*' && !byShape.get(shape(openApiPath(path)))?.[method.toLowerCase()]);
    expect(absent.map(([m, p]) => `${m} ${p}`)).toEqual([]);
  });

  it('every route declares its response schema (the modules not done yet are listed)', () => {
    const json = maru.hub.api.routes().filter((r) => r.kind === 'route');
    const undeclared = json.filter((r) => responsesOf(r.def.response).size === 0).map((r) => `${r.method} ${r.path}`);
    const mustHave = undeclared.filter((r) => !NOT_JSON.includes(r) && DECLARED.some((p) => r.split(' ')[1]!.startsWith(p)));
    expect(mustHave).toEqual([]);
    if (undeclared.length) console.info(`routes without a response schema yet (${undeclared.length}):\n  ${undeclared.join('\n  ')}`);
  });

  it('answers are checked against the declared schemas (contract): a drifting answer is caught', async () => {
    // the shared helper validates every JSON answer; this one passes
    expect((await call(maru.url, 'GET', '/healthz')).status).toBe(200);
    // an error answer is checked against the one error shape
    expect((await call(maru.url, 'GET', '/api/md/doc/no-such-doc')).body.error.code).toBeTypeOf('string');
    // a body that drifted from the declaration is refused by the same check
    const { checkContract } = await import('../support/contract.js');
    await expect(checkContract(`${maru.url}/healthz`, 'GET', 200, { status: 'ok' })).rejects.toThrow(/uptime_s/);
    await expect(checkContract(`${maru.url}/api/md/doc/x`, 'GET', 404, { error: { code: 'x' } })).rejects.toThrow(/message/);
  });
});
