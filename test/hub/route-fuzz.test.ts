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
import { open } from 'lmdb';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, TEST_ADMIN_PASSWORD } from '../support/auth.js';
import { casesFor, concretePath, type Op } from '../support/openapi-cases.js';
import { tempDir } from '../support/process.js';

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
/** What the hub writes on its own timers while requests run: the weekly payout schedule catching up, the chain's tree head checked on its schedule. */
const BACKGROUND = /pay:payout|pay:sth/;
const ignored = (k: string) => ATTEMPT_RECORDS.test(k) || BACKGROUND.test(k);

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
    console.log(`route fuzz: ${requests} requests over ${routes} operations, ${failures.length} answered 5xx or out of shape`);
    expect(failures).toEqual([]);
    expect(writers).toEqual([]);
    expect(routes).toBeGreaterThan(100);
    expect(requests).toBeGreaterThan(5000);
  });
});
