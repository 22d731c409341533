import { createHash, createPublicKey, verify } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';

// Offline mode over real HTTP (docs/ticket.md, "Offline mode"): the signed list, the upload of
// offline scans (in order, exactly once, conflicts kept with both scans), bad input, credentials.
const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const clock = new ManualClock(T0);
let maru: Maru;
let base: string;
let staff: Record<string, string>;

beforeAll(async () => {
  maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('ticket-offline'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), {
    clock,
    logger: pino({ level: 'silent' }),
  });
  base = maru.url;
  staff = bearer(await signIn(base, ['staff']));
});
afterAll(() => maru?.stop());

async function showWith(seats: string[]) {
  const show = (await call(base, 'POST', '/api/shows', { name: '오프라인 공연', venue: '소극장', date: '2026-12-24T20:00:00+09:00' }, staff)).body;
  const tickets = [];
  for (const seat of seats) tickets.push((await call(base, 'POST', '/api/reservations', { show_id: show.id, seat, amount_paid: 30000, holder: `홀더-${seat}` }, staff)).body);
  return { show, tickets };
}

const hash = (showId: string, code: string) => createHash('sha256').update(`${showId}:${code}`).digest().subarray(0, 16).toString('base64url');
let n = 0;
const scan = (code: string, at = T0 - 60_000) => ({ id: `s-${process.pid}-${++n}`, code, scanned_at: new Date(at).toISOString(), source: 'camera' });

describe('the offline check-in list', () => {
  it('is signed with Ed25519 over its canonical JSON, has no holder names, and answers 304 for its version', async () => {
    const { show, tickets } = await showWith(['A-1', 'A-2', 'A-3']);
    await call(base, 'POST', `/api/tickets/${tickets[1].reservation_id}/cancel`, {}, staff);
    await call(base, 'POST', '/api/checkin', { code: tickets[2].code }, staff);
    const device = bearer(await deviceToken(base, 'E', 'door-east'));
    const r = await call(base, 'GET', `/api/checkin/list?show_id=${show.id}`, undefined, device);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const list = r.body;
    expect(r.headers.get('etag')).toBe(`"${list.version}"`);
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: list.public_key }, format: 'jwk' });
    expect(verify(null, Buffer.from(list.payload), key, Buffer.from(list.signature, 'base64url'))).toBe(true);
    // a changed byte fails
    expect(verify(null, Buffer.from(list.payload.replace('entry_allowed', 'checked_in')), key, Buffer.from(list.signature, 'base64url'))).toBe(false);
    const payload = JSON.parse(list.payload);
    expect(payload).toMatchObject({ kind: 'maru.checkin-list', v: 1, show: { id: show.id, name: '오프라인 공연' }, version: list.version, count: 3 });
    const byHash = new Map(payload.tickets.map((t: any) => [t.h, t]));
    expect(byHash.get(hash(show.id, tickets[0].code))).toEqual({ h: hash(show.id, tickets[0].code), status: 'entry_allowed', seat: 'A-1', checked_in_at: null });
    expect(byHash.get(hash(show.id, tickets[1].code))).toMatchObject({ status: 'cancelled' });
    expect(byHash.get(hash(show.id, tickets[2].code))).toMatchObject({ status: 'checked_in', checked_in_at: expect.any(String) });
    expect(list.payload).not.toContain('홀더');
    expect(list.payload).not.toContain('TK-');
    // the same key signs every list; unchanged tickets give the same version, and 304
    const again = await call(base, 'GET', `/api/checkin/list?show_id=${show.id}`, undefined, { ...device, 'if-none-match': r.headers.get('etag')! });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
    await call(base, 'POST', '/api/checkin', { code: tickets[0].code }, staff);
    const changed = await call(base, 'GET', `/api/checkin/list?show_id=${show.id}`, undefined, { ...device, 'if-none-match': r.headers.get('etag')! });
    expect(changed.status).toBe(200);
    expect(changed.body.version).not.toBe(list.version);
    expect(changed.body.public_key).toBe(list.public_key);
  });
});

describe('offline scans uploaded', () => {
  it('are settled in order, once each; the second admission of one ticket is a conflict with both scans kept', async () => {
    const { show, tickets } = await showWith(['B-1', 'B-2', 'B-3', 'B-4']);
    const east = bearer(await deviceToken(base, 'E', 'door-east'));
    const west = bearer(await deviceToken(base, 'W', 'door-west'));
    const [a, b, c, d] = tickets.map((t: any) => t.code);
    await call(base, 'POST', `/api/tickets/${tickets[3].reservation_id}/cancel`, {}, staff);
    // east scanned a, b, c offline; west scanned c (later), d (cancelled meanwhile) and an unknown code
    const eastScans = [scan(a, T0 - 300_000), scan(b, T0 - 200_000), scan(c, T0 - 100_000)];
    const westScans = [scan(c, T0 - 50_000), scan(d, T0 - 40_000), scan('TK-22222222', T0 - 30_000)];
    const e1 = await call(base, 'POST', '/api/checkin/offline', { scans: eastScans }, east);
    expect(e1.status).toBe(200);
    expect(e1.body.results.map((x: any) => [x.id, x.result, x.replayed])).toEqual(eastScans.map((s) => [s.id, 'ok', false]));
    // the check-in time is the scan's, the scanner and gate the device's
    expect(e1.body.results[0].checkin).toEqual({ at: eastScans[0]!.scanned_at, scanner: 'door-east', gate: 'E' });
    const w1 = await call(base, 'POST', '/api/checkin/offline', { scans: westScans }, west);
    expect(w1.body.results.map((x: any) => x.result)).toEqual(['conflict', 'conflict', 'invalid']);
    expect(w1.body.results[0].conflict).toMatchObject({
      reason: 'already_redeemed', code: c, scanner: 'door-west', gate: 'W', at: westScans[0]!.scanned_at,
      first_checkin: { at: eastScans[2]!.scanned_at, scanner: 'door-east', gate: 'E', offline: true },
    });
    expect(w1.body.results[1].conflict).toMatchObject({ reason: 'canceled', code: d, first_checkin: null });

    // sent again (a lost answer): the same results, replayed, and nothing new written
    const auditBefore = (await call(base, 'GET', `/api/checkins/audit?show_id=${show.id}&limit=100`, undefined, staff)).body.entries;
    const e2 = await call(base, 'POST', '/api/checkin/offline', { scans: eastScans }, east);
    const w2 = await call(base, 'POST', '/api/checkin/offline', { scans: westScans }, west);
    expect(e2.body.results.map((x: any) => [x.result, x.replayed])).toEqual([['ok', true], ['ok', true], ['ok', true]]);
    expect(w2.body.results.map((x: any) => [x.result, x.replayed])).toEqual([['conflict', true], ['conflict', true], ['invalid', true]]);
    const audit = (await call(base, 'GET', `/api/checkins/audit?show_id=${show.id}&limit=100`, undefined, staff)).body.entries;
    expect(audit).toEqual(auditBefore);

    // the state: a, b, c checked in once (by east), d cancelled
    for (const [code, status] of [[a, 'checked_in'], [b, 'checked_in'], [c, 'checked_in'], [d, 'cancelled']] as const) {
      const t = (await call(base, 'GET', `/api/mticket/${code}`)).body;
      expect(t.status).toBe(status);
      if (status === 'checked_in') expect(t.checked_in_by).toEqual({ scanner: 'door-east', gate: 'E' });
    }
    const counts = (await call(base, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body;
    expect(counts).toMatchObject({ tickets: 3, checked_in: 3, cancelled: 1 });
    // the show's audit: both scans of c, with scanner, gate and time
    const ofC = audit.filter((e: any) => e.code === c);
    expect(ofC.map((e: any) => [e.result, e.scanner, e.gate, e.at])).toEqual([
      ['conflict', 'door-west', 'W', westScans[0]!.scanned_at],
      ['ok', 'door-east', 'E', eastScans[2]!.scanned_at],
    ]);
    expect(ofC[0].offline).toMatchObject({ id: westScans[0]!.id, scanned_at: westScans[0]!.scanned_at });
    expect(audit.filter((e: any) => e.result === 'ok')).toHaveLength(3);
    // the conflict list for staff
    const conflicts = (await call(base, 'GET', `/api/checkin/conflicts?show_id=${show.id}`, undefined, staff)).body.conflicts;
    expect(conflicts.map((x: any) => [x.code, x.reason, x.scanner])).toEqual([[d, 'canceled', 'door-west'], [c, 'already_redeemed', 'door-west']]);
  });

  it('an offline scan of a ticket checked in online is a conflict; one carrying the online nonce is the same check-in', async () => {
    const { tickets } = await showWith(['C-1', 'C-2']);
    const device = bearer(await deviceToken(base, 'N', 'door-north'));
    await call(base, 'POST', '/api/checkin', { code: tickets[0].code }, staff);
    // C-2 was sent online, its answer lost; the page queued it offline with the same nonce
    expect((await call(base, 'POST', '/api/checkin', { code: tickets[1].code, nonce: 'lost-answer-1' }, device)).status).toBe(201);
    const r = await call(base, 'POST', '/api/checkin/offline', { scans: [scan(tickets[0].code), { ...scan(tickets[1].code), id: 'lost-answer-1' }] }, device);
    expect(r.body.results.map((x: any) => [x.result, x.replayed])).toEqual([['conflict', false], ['ok', true]]);
  });

  it('two uploads of one batch at once settle each scan once', async () => {
    const { show, tickets } = await showWith(['D-1', 'D-2', 'D-3']);
    const device = bearer(await deviceToken(base, 'S', 'door-south'));
    const scans = tickets.map((t: any) => scan(t.code));
    const answers = await Promise.all([1, 2, 3].map(() => call(base, 'POST', '/api/checkin/offline', { scans }, device)));
    for (const a of answers) expect(a.body.results.every((x: any) => x.result === 'ok')).toBe(true);
    const audit = (await call(base, 'GET', `/api/checkins/audit?show_id=${show.id}&limit=100`, undefined, staff)).body.entries;
    expect(audit.map((e: any) => e.result)).toEqual(['ok', 'ok', 'ok']);
    expect((await call(base, 'GET', `/api/checkin/conflicts?show_id=${show.id}`, undefined, staff)).body.conflicts).toEqual([]);
  });
});

describe('offline routes refuse', () => {
  it('bad input', async () => {
    const { show, tickets } = await showWith(['E-1']);
    const device = bearer(await deviceToken(base, 'E', 'door-bad'));
    const good = scan(tickets[0].code);
    const many = Array.from({ length: 201 }, () => scan(tickets[0].code));
    const cases: [string, string, unknown, number, string][] = [
      ['GET', '/api/checkin/list', undefined, 400, 'invalid_query'],
      ['GET', '/api/checkin/list?show_id=nope', undefined, 400, 'invalid_query'],
      ['GET', `/api/checkin/list?show_id=${show.id}&extra=1`, undefined, 400, 'invalid_query'],
      ['GET', '/api/checkin/list?show_id=s_0000000000', undefined, 404, 'show_not_found'],
      ['POST', '/api/checkin/offline', {}, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: many }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, id: 'has space' }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, id: 'x'.repeat(65) }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, code: 'TK-1' }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, scanned_at: 'yesterday' }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, source: 'telepathy' }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [{ ...good, scanner: 'someone-else' }] }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', { scans: [good], extra: 1 }, 400, 'invalid_body'],
      ['POST', '/api/checkin/offline', '{not json', 400, 'invalid_json'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await call(base, method, path, body, device);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`).toBe(status);
      expect(r.body.error.code).toBe(code);
    }
    for (const [path, code] of [['/api/checkin/conflicts?limit=0', 'invalid_query'], ['/api/checkin/conflicts?show_id=x', 'invalid_query'], ['/api/checkin/conflicts?show_id=s_0000000000', 'show_not_found']]) {
      expect((await call(base, 'GET', path!, undefined, staff)).body.error.code).toBe(code);
    }
    // nothing above checked the ticket in
    expect((await call(base, 'GET', `/api/mticket/${tickets[0].code}`)).body.status).toBe('entry_allowed');
  });

  it('a missing, unknown, wrong-role or revoked credential', async () => {
    const { show, tickets } = await showWith(['F-1']);
    const editor = bearer(await signIn(base, ['editor']));
    const token = await deviceToken(base, 'F', 'door-revoked');
    const device = bearer(token);
    const list = `/api/checkin/list?show_id=${show.id}`;
    const batch = { scans: [scan(tickets[0].code)] };
    for (const [method, path, body] of [['GET', list, undefined], ['POST', '/api/checkin/offline', batch], ['GET', '/api/checkin/conflicts', undefined]] as const) {
      const none = await call(base, method, path, body);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect((await call(base, method, path, body, bearer(`mt_${'A'.repeat(43)}`))).status).toBe(401);
      expect((await call(base, method, path, body, editor)).status).toBe(403);
    }
    // conflicts are for staff, not door devices
    expect((await call(base, 'GET', '/api/checkin/conflicts', undefined, device)).status).toBe(403);
    expect((await call(base, 'GET', list, undefined, device)).status).toBe(200);
    // revoked: the next sync is refused, and its scans are not settled
    const me = (await call(base, 'GET', '/api/auth/me', undefined, device)).body.identity;
    expect((await call(base, 'DELETE', `/api/auth/devices/${me.id}`, undefined, staff)).status).toBe(200);
    expect((await call(base, 'GET', list, undefined, device)).status).toBe(401);
    expect((await call(base, 'POST', '/api/checkin/offline', batch, device)).status).toBe(401);
    expect((await call(base, 'GET', `/api/mticket/${tickets[0].code}`)).body.status).toBe('entry_allowed');
  });
});
