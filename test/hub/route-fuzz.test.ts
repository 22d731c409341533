/**
 * Bad input against the whole route table, generated from the hub's own /openapi.json: for every
 * route, wrong types, missing and extra fields, huge strings, control characters, bad JSON, wrong
 * content types, bad path parameters and bad query values, each without a credential, with a
 * wrong one and with the operator's (who passes every role check). Requests go through hub.inject
 * (the same pipeline as a socket). Every answer is below 500, every error has the shared shape
 * {error: {code, message}}, and a refused request leaves the store as it was (every LMDB entry,
 * compared before and after each request; records of attempts excepted, see ATTEMPT_RECORDS).
 */
import { generateKeyPairSync } from 'node:crypto';
import { join } from 'node:path';
import fc from 'fast-check';
import { open } from 'lmdb';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { tempDir } from '../support/process.js';

interface Op {
  parameters?: { name: string; in: 'path' | 'query'; schema?: Schema }[];
  requestBody?: { content: Record<string, { schema?: Schema }> };
  responses: Record<string, unknown>;
}
interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
}

let maru: Maru;
let dataDir: string;
let operator: string;
let paths: Record<string, Record<string, Op>>;

beforeAll(async () => {
  dataDir = tempDir('route-fuzz');
  // the payment relay's users come from an SSO token, its webhook is signed and its chain's tree
  // heads are checked against the chain's key: all configured (the chain a stand-in in the process),
  // so their routes judge the input instead of answering 503 not configured
  const sso = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const env = { BANKING_WEBHOOK_SECRET: 'fuzz-webhook-secret-0123456789', SSO_PUBLIC_KEY: sso, SSO_AUDIENCE: 'maru', PAYMENT_PEERS: 'embedded' };
  maru = await startMaru(
    loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env, ...AUTH_TEST_ENV }),
    { logger: pino({ level: 'silent' }) },
  );
  const login = await maru.hub.inject('POST', '/api/auth/login', { body: { user: 'admin', password: TEST_ADMIN_PASSWORD } });
  expect(login.status).toBe(200);
  operator = login.body.token;
  paths = (maru.hub.api.document() as { paths: typeof paths }).paths;
});
afterAll(() => maru?.stop());

let env: ReturnType<typeof open<string, Buffer>> | undefined;
/** Every entry of the hub's LMDB store (key -> value), read from the committed data. */
function storeEntries(): Map<string, string> {
  env ??= open<string, Buffer>({ path: join(dataDir, 'store'), keyEncoding: 'binary', encoding: 'string', readOnly: true });
  env.resetReadTxn();
  const out = new Map<string, string>();
  for (const { key, value } of env.getRange({})) out.set(Buffer.isBuffer(key) ? key.toString('latin1') : String(key), String(value));
  return out;
}
const changedKeys = (a: Map<string, string>, b: Map<string, string>) =>
  [...new Set([...a.keys(), ...b.keys()])].filter((k) => a.get(k) !== b.get(k)).map((k) => k.replace(/[^\x20-\x7e]/g, ''));

/**
 * What a refused request may still write, by design: counters of attempts (rate limits, failed
 * logins: refusals count, or guessing would be free) and the audit trails that record refused
 * attempts (a malformed check-in, a refused partner action).
 */
const ATTEMPT_RECORDS = /ratelimit:|auth:fail:|ticket:audit|rental:audit/;
/** What the hub writes on its own timers while requests run: the weekly payout schedule catching up. */
const BACKGROUND = /pay:payout/;
const ignored = (k: string) => ATTEMPT_RECORDS.test(k) || BACKGROUND.test(k);

const CONTROL = 'a\u0000b\u0007\u001b[31m\u202e\r\n\ud800';
const HUGE = 'x'.repeat(200_000);
const BAD_SEGMENTS = ['%00', '%E0%A4%A', 'x'.repeat(400), '..', '%2F..%2Fetc', '%20', CONTROL.slice(0, 3).replace(/\u0000/, '%00'), '-1', '1e309'];

const typeOf = (s: Schema | undefined) => (Array.isArray(s?.type) ? s!.type[0] : s?.type);
/** A value of the right JSON type (its content is still arbitrary). */
function plausible(s: Schema | undefined): unknown {
  switch (typeOf(s)) {
    case 'string': return 'a';
    case 'integer':
    case 'number': return 1;
    case 'boolean': return true;
    case 'array': return [];
    case 'object': return {};
    default: return 'a';
  }
}
/** A value of a wrong JSON type. */
function wrongType(s: Schema | undefined): unknown[] {
  switch (typeOf(s)) {
    case 'string': return [12345, null, ['a'], { a: 1 }];
    case 'integer':
    case 'number': return ['12', 1.5, -1e308, null, true];
    case 'boolean': return ['true', 0];
    case 'array': return [{}, 'a'];
    case 'object': return [[], 'a', 0];
    default: return [null, { deep: { deeper: [1, { x: '' }] } }];
  }
}

interface Case {
  what: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
}

function concretePath(template: string, bad?: { name: string; value: string }): string {
  return template.replace(/\{(\w+)\}/g, (_m, name: string) => (bad?.name === name ? bad.value : name === 'path' ? 'x' : 'x1'));
}

/** The bad requests of one operation. */
function casesFor(template: string, method: string, op: Op, seed: number): Case[] {
  const out: Case[] = [];
  const params = op.parameters ?? [];
  const good = concretePath(template);
  // path parameters
  for (const p of params.filter((x) => x.in === 'path')) {
    for (const value of BAD_SEGMENTS) out.push({ what: `path ${p.name}=${value.slice(0, 12)}`, path: concretePath(template, { name: p.name, value }) });
  }
  // query values: wrong type, control characters, huge, repeated, an unknown parameter, bad encoding
  for (const p of params.filter((x) => x.in === 'query')) {
    for (const v of ['%00', encodeURIComponent(CONTROL.slice(0, -1)), '%ED%A0%80', 'x'.repeat(5000), '-1', 'NaN', '[]', '%E0%A4%A']) out.push({ what: `query ${p.name}`, path: `${good}?${p.name}=${v}` });
    out.push({ what: `query ${p.name} twice`, path: `${good}?${p.name}=a&${p.name}=b` });
  }
  out.push({ what: 'unknown query parameter', path: `${good}?zz_unknown=1&access_token=` });
  out.push({ what: 'bad query encoding', path: `${good}?%E0%A4%A=1` });
  if (method === 'get' || method === 'delete') {
    out.push({ what: 'a body where none is read', path: good, body: '{"a":1}', headers: { 'content-type': 'text/plain' } });
    return out;
  }
  // bodies
  const json = op.requestBody?.content['application/json']?.schema;
  const props = json?.properties ?? {};
  const required = json?.required ?? [];
  const valid: Record<string, unknown> = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, plausible(s)]));
  const bodies: [string, unknown][] = [
    ['no body', undefined],
    ['empty object', {}],
    ['array', [valid]],
    ['null', null],
    ['string', 'text'],
    ['extra field', { ...valid, zz_extra: 'x' }],
    ['prototype keys', JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}')],
  ];
  for (const name of required) {
    const { [name]: _missing, ...rest } = valid;
    bodies.push([`missing ${name}`, rest]);
  }
  for (const [name, s] of Object.entries(props)) {
    for (const w of wrongType(s)) bodies.push([`${name} of a wrong type`, { ...valid, [name]: w }]);
    if (typeOf(s) === 'string') {
      bodies.push([`${name} huge`, { ...valid, [name]: HUGE.slice(0, 20_000) }]);
      bodies.push([`${name} control characters`, { ...valid, [name]: CONTROL }]);
    }
  }
  // random JSON values (fast-check, fixed seed: the same cases every run)
  for (const v of fc.sample(fc.jsonValue({ maxDepth: 3 }), { seed, numRuns: 4 })) bodies.push(['random JSON', v]);
  for (const [what, body] of bodies) out.push({ what: `body: ${what}`, path: good, body });
  out.push({ what: 'body over every limit', path: good, body: { ...valid, big: HUGE.repeat(60) } });
  out.push({ what: 'broken JSON', path: good, body: '{"a":', headers: { 'content-type': 'application/json' } });
  out.push({ what: 'JSON with a BOM and trailing garbage', path: good, body: '\ufeff{}}}', headers: { 'content-type': 'application/json' } });
  out.push({ what: 'text/plain', path: good, body: 'a=1', headers: { 'content-type': 'text/plain' } });
  out.push({ what: 'form post', path: good, body: 'a=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  out.push({ what: 'multipart without boundary', path: good, body: 'x', headers: { 'content-type': 'multipart/form-data' } });
  out.push({ what: 'multipart garbage', path: good, body: '--b\r\nContent-Disposition: form-data; name="zz"\r\n\r\n' + CONTROL, headers: { 'content-type': 'multipart/form-data; boundary=b' } });
  out.push({ what: 'lying content-length', path: good, body: '{}', headers: { 'content-type': 'application/json', 'content-length': '999999999' } });
  return out;
}

const CREDENTIALS: [string, () => Record<string, string>][] = [
  ['no credential', () => ({})],
  ['a wrong token', () => ({ authorization: 'Bearer not-a-token' })],
  ['a malformed Authorization', () => ({ authorization: 'Basic \u0000' })],
  ['the operator', () => ({ authorization: `Bearer ${operator}` })],
];

describe('bad input against every route of /openapi.json', () => {
  it('answers below 500 with the shared error shape, and writes nothing', { timeout: 120_000 }, async () => {
    const failures: string[] = [];
    const writers: string[] = [];
    let requests = 0;
    let routes = 0;
    let seed = 1;
    for (const [template, ops] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(ops)) {
        routes++;
        // an SSE stream with acceptable input stays open: its bad input is covered, its good input is not sent
        const isStream = Object.keys((op.responses['200'] as { content?: object } | undefined)?.content ?? {}).includes('text/event-stream');
        for (const c of casesFor(template, method, op, seed++)) {
          for (const [who, headers] of CREDENTIALS) {
            if (isStream && c.path === concretePath(template)) continue;
            const send = () => maru.hub.inject(method.toUpperCase(), c.path, { headers: { ...headers(), ...c.headers }, body: c.body });
            const before = storeEntries();
            const a = await send();
            requests++;
            const where = `${method.toUpperCase()} ${template} (${c.what}; ${who}) -> ${a.status}`;
            if (a.status >= 500) failures.push(`${where}: ${a.text.slice(0, 200)}`);
            else if (a.status >= 400) {
              const e = a.body?.error;
              if (typeof e?.code !== 'string' || typeof e?.message !== 'string') failures.push(`${where}: not the error shape: ${a.text.slice(0, 200)}`);
              // a refused request writes nothing (beyond the records of attempts); a change seen is
              // confirmed by sending the request again, so a background write (a timer) is not blamed
              let changed = changedKeys(before, storeEntries()).filter((k) => !ignored(k));
              if (changed.length) {
                const again = storeEntries();
                await send();
                changed = changedKeys(again, storeEntries()).filter((k) => !ignored(k));
                if (changed.length) writers.push(`${where}: wrote ${changed.join(', ')}`);
              }
            }
          }
        }
      }
    }
    expect(failures).toEqual([]);
    expect(writers).toEqual([]);
    expect(routes).toBeGreaterThan(100);
    expect(requests).toBeGreaterThan(5000);
  });
});
