import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Hub } from '../../src/hub/index.js';
import { qDecimal, qInt, qText } from '../../src/hub/query.js';
import { validate } from '../../src/hub/http.js';
import { tempDir } from '../support/process.js';

// What the hub accepts as a request's inputs before any handler sees them (src/hub/query.ts,
// src/hub/body.ts): query numbers and texts exactly of the kind asked for, and a body of the
// route's media type within its byte limit. Each refusal is a 4xx in the shared error shape.

const parse = <T>(schema: z.ZodType<T>, v: unknown) => {
  try {
    return { ok: validate(schema, v, 'query') };
  } catch (err) {
    const e = err as { status: number; code: string; message: string };
    return { error: `${e.status} ${e.code} ${e.message}` };
  }
};
const inQuery = <T>(field: z.ZodType<T>, v: unknown) => parse(z.object({ x: field }), { x: v });

describe('query numbers and texts', () => {
  it('an integer is an integer written plainly: no fraction, no exponent, no spaces, at most 15 digits', () => {
    const i = qInt();
    for (const [v, want] of [['0', 0], ['42', 42], ['-7', -7], ['123456789012345', 123456789012345], [7, 7]] as const) {
      expect(inQuery(i, v)).toEqual({ ok: { x: want } });
    }
    for (const v of ['1.5', '1e3', '', ' 7', '7 ', '+7', '0x10', '1234567890123456', 'seven', 1.5, null, ['1', '2'], ['12']]) {
      expect(inQuery(i, v), JSON.stringify(v)).toEqual({ error: '400 invalid_query x: must be an integer' });
    }
  });

  it('an integer within its bounds, both ends included', () => {
    const i = qInt({ min: 1, max: 100 });
    expect(inQuery(i, '1')).toEqual({ ok: { x: 1 } });
    expect(inQuery(i, '100')).toEqual({ ok: { x: 100 } });
    expect(inQuery(i, '0')).toEqual({ error: '400 invalid_query x: must be at least 1' });
    expect(inQuery(i, '101')).toEqual({ error: '400 invalid_query x: must be at most 100' });
    expect(inQuery(qInt({ min: -5 }), '-6')).toEqual({ error: '400 invalid_query x: must be at least -5' });
    expect(inQuery(qInt({ max: 0 }), '0')).toEqual({ ok: { x: 0 } });
  });

  it('a decimal is kept as its text for exact parsing; a JSON number becomes its text', () => {
    const d = qDecimal();
    for (const [v, want] of [['0', '0'], ['1.25', '1.25'], ['-0.5', '-0.5'], ['123456789012345.123456', '123456789012345.123456'], [2.5, '2.5'], [3, '3']] as const) {
      expect(inQuery(d, v)).toEqual({ ok: { x: want } });
    }
    for (const v of ['1.', '.5', '1e3', '1,5', ' 1', '1234567890123456', '--1', '', Number.NaN, Number.POSITIVE_INFINITY, null, true, ['1.5']]) {
      expect(inQuery(d, v), String(v)).toEqual({ error: '400 invalid_query x: must be a decimal number' });
    }
  });

  it('a text is given once, not empty, within its length', () => {
    expect(inQuery(qText(), 'a')).toEqual({ ok: { x: 'a' } });
    expect(inQuery(qText(3), 'abc')).toEqual({ ok: { x: 'abc' } });
    expect(inQuery(qText(3), 'abcd')).toEqual({ error: '400 invalid_query x: must be at most 3 characters' });
    expect(inQuery(qText(), 'x'.repeat(200))).toEqual({ ok: { x: 'x'.repeat(200) } });
    expect(inQuery(qText(), 'x'.repeat(201))).toEqual({ error: '400 invalid_query x: must be at most 200 characters' });
    expect(inQuery(qText(), '')).toEqual({ error: '400 invalid_query x: must not be empty' });
    expect(inQuery(qText(), ['a', 'b'])).toEqual({ error: '400 invalid_query x: must be given once, as text' });
  });
});

describe('request bodies', () => {
  let hub: Hub;
  const LIMIT = 64;
  beforeAll(() => {
    hub = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: LIMIT, webDir: tempDir('hub-inputs-web'), shutdownGraceMs: 100 });
    const echo = (ctx: { body: unknown }) => ({ body: ctx.body ?? null });
    hub.route({ method: 'POST', path: '/json', body: { schema: z.object({ s: z.string() }) }, handler: echo });
    hub.route({ method: 'POST', path: '/small', body: { schema: z.object({ s: z.string() }), limit: 16 }, handler: echo });
    hub.route({ method: 'POST', path: '/optional', body: { schema: z.object({ s: z.string() }).optional(), optional: true }, handler: echo });
    hub.route({
      method: 'POST',
      path: '/text',
      body: { schema: z.string(), reader: { mediaTypes: ['text/plain'], parse: (raw) => raw.toString('utf8') } },
      handler: echo,
    });
    hub.route({ method: 'POST', path: '/optional-object', body: { schema: z.object({ s: z.string() }), optional: true }, handler: echo });
    hub.route({
      method: 'POST',
      path: '/typed',
      body: { schema: z.string(), reader: { mediaTypes: ['text/csv'], parse: (raw, type) => `${type} ${raw.toString('utf8')}` } },
      handler: echo,
    });
    hub.route({ method: 'POST', path: '/form', body: { schema: z.object({ s: z.string() }), multipart: { files: ['f'] } }, handler: echo });
  });
  afterAll(() => hub.stop());

  const post = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }) => hub.inject('POST', path, { body, headers });
  const refused = async (path: string, body: string, headers?: Record<string, string>) => {
    const r = await post(path, body, headers);
    return [r.status, r.body?.error?.code, r.body?.error?.details];
  };

  it('takes JSON up to the limit, its last byte included', async () => {
    const exact = JSON.stringify({ s: 'x'.repeat(LIMIT - 8) });
    expect(exact.length).toBe(LIMIT);
    expect((await post('/json', exact)).body).toEqual({ body: { s: 'x'.repeat(LIMIT - 8) } });
    const over = JSON.stringify({ s: 'x'.repeat(LIMIT - 7) });
    expect(await refused('/json', over)).toEqual([413, 'payload_too_large', { limit: LIMIT }]);
    // a declared length over the limit is refused before anything is read
    expect(await refused('/json', exact, { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) })).toEqual([413, 'payload_too_large', { limit: LIMIT }]);
    expect((await post('/json', exact, { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) })).body.error.message).toBe(`the body is larger than ${LIMIT} bytes`);
    expect((await post('/json', exact, { 'content-type': 'application/json', 'content-length': String(LIMIT) })).status).toBe(200);
    // a route's own limit
    expect((await post('/small', '{"s":"01234567"}')).status).toBe(200);
    expect(await refused('/small', '{"s":"012345678"}')).toEqual([413, 'payload_too_large', { limit: 16 }]);
  });

  it('counts a body of no declared length (chunked) against the limit while it arrives, in chunks of any size', async () => {
    const chunked = { 'content-type': 'application/json', 'transfer-encoding': 'chunked' };
    const exact = JSON.stringify({ s: 'x'.repeat(LIMIT - 8) });
    expect((await post('/json', exact, chunked)).body).toEqual({ body: { s: 'x'.repeat(LIMIT - 8) } });
    expect(await refused('/json', JSON.stringify({ s: 'x'.repeat(LIMIT - 7) }), chunked)).toEqual([413, 'payload_too_large', { limit: LIMIT }]);
    const r = await post('/json', JSON.stringify({ s: 'x'.repeat(LIMIT - 7) }), chunked);
    expect(r.body.error.message).toBe(`the body is larger than ${LIMIT} bytes`);
    // a body the hub reads in several chunks (the in-process request feeds 64 KiB at a time) arrives whole
    const big = new Hub({ logger: pino({ level: 'silent' }), bodyLimit: 200_000, webDir: tempDir('hub-inputs-big'), shutdownGraceMs: 100 });
    big.route({ method: 'POST', path: '/big', body: { schema: z.object({ s: z.string() }) }, handler: (ctx) => ({ length: ctx.body.s.length, tail: ctx.body.s.slice(-3) }) });
    const s = `${'가'.repeat(50_000)}end`;
    for (const headers of [chunked, { 'content-type': 'application/json' }]) {
      expect((await big.inject('POST', '/big', { body: JSON.stringify({ s }), headers })).body).toEqual({ length: 50_003, tail: 'end' });
    }
    await big.stop();
  });

  it('refuses a body that is not JSON, and one of another media type', async () => {
    expect(await refused('/json', '{"s":')).toEqual([400, 'invalid_json', undefined]);
    expect(await refused('/json', 's=1', { 'content-type': 'application/x-www-form-urlencoded' })).toEqual([415, 'unsupported_media_type', { received: 'application/x-www-form-urlencoded' }]);
    expect((await post('/json', '{"s":"a"}', { 'content-type': 'Application/JSON; charset=utf-8' })).body).toEqual({ body: { s: 'a' } });
    // a route that also streams multipart names both types
    const r = await post('/form', 'x', { 'content-type': 'text/plain' });
    expect([r.status, r.body.error.code, r.body.error.message]).toEqual([415, 'unsupported_media_type', 'content-type must be application/json or multipart/form-data']);
    // a reader is given the content type as sent
    expect((await post('/typed', 'a,b', { 'content-type': 'text/csv; header=present' })).body).toEqual({ body: 'text/csv; header=present a,b' });
    // a reader of its own: its types only
    expect((await post('/text', 'hello', { 'content-type': 'text/plain' })).body).toEqual({ body: 'hello' });
    expect(await refused('/text', '"hello"')).toEqual([415, 'unsupported_media_type', { received: 'application/json' }]);
  });

  it('an absent body: required unless the route says it is optional', async () => {
    const none = await post('/json', '', {});
    expect([none.status, none.body.error.code, none.body.error.details]).toEqual([400, 'invalid_body', { accepts: ['application/json'] }]);
    expect(none.body.error.message).toBe('a request body is required');
    const formNone = await post('/form', '', {});
    expect(formNone.body.error.details).toEqual({ accepts: ['application/json', 'multipart/form-data'] });
    expect((await post('/optional', '', {})).body).toEqual({ body: null });
    expect((await post('/optional', '{"s":"a"}')).body).toEqual({ body: { s: 'a' } });
    // optional, but the schema wants an object: the absent body is refused as the body
    const absent = await post('/optional-object', '', {});
    expect([absent.status, absent.body.error.code, absent.body.error.details.issues[0].field]).toEqual([400, 'invalid_body', 'body']);
    // an empty body that says it is JSON is validated as nothing: the schema names what is missing
    const empty = await post('/json', '');
    expect([empty.status, empty.body.error.code]).toEqual([400, 'invalid_body']);
    // a body without a content type is of no accepted type
    expect(await refused('/json', '{"s":"a"}', {})).toEqual([415, 'unsupported_media_type', { received: null }]);
    // an empty body of another type is that type's refusal
    expect(await refused('/json', '', { 'content-type': 'text/plain' })).toEqual([415, 'unsupported_media_type', { received: 'text/plain' }]);
  });
});
