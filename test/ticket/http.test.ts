import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { call as rawCall } from '../support/http.js';
import { tempDir } from '../support/process.js';
import { connectTopics } from '../support/ws.js';

const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-12-24T18:00:00+09:00');


/** The staff credential of the hub under test; every call below carries it unless it says otherwise. */
let H: Record<string, string> = {};
let staffToken = '';
const call = (base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawCall(base, method, path, body, { ...H, ...headers });

async function start(clock = new ManualClock(T0)) {
  const maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('ticket-http'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), {
    clock,
    logger: silent,
  });
  staffToken = await signIn(maru.url, ['staff']);
  H = bearer(staffToken);
  return maru;
}

async function book(base: string, seat: string) {
  const show = await call(base, 'POST', '/api/shows', { name: '재즈 나이트', venue: '블루홀', date: '2026-12-24T20:00:00+09:00' });
  expect(show.status).toBe(201);
  const r = await call(base, 'POST', '/api/reservations', { show_id: show.body.id, seat, amount_paid: 45000 });
  expect(r.status).toBe(201);
  return { show: show.body, ticket: r.body };
}

describe('ticket routes', () => {
  let maru: Maru;
  let base: string;
  beforeAll(async () => {
    maru = await start();
    base = maru.url;
  });
  afterAll(() => maru.stop());

  it('books, looks up, serves the QR PNG, the ticket page and the scanner page', async () => {
    const { ticket } = await book(base, 'A-1');
    expect(ticket).toMatchObject({ show_name: '재즈 나이트', venue: '블루홀', seat: 'A-1', amount_paid: 45000, status: 'entry_allowed' });
    expect(ticket.page_url).toBe(`/mticket/${ticket.code}`);
    const got = await call(base, 'GET', `/api/mticket/${ticket.code}`);
    expect(got.status).toBe(200);
    expect(got.headers.get('cache-control')).toBe('no-store');
    expect(got.body).toEqual(ticket);
    // lower case and a missing prefix find the same ticket
    expect((await call(base, 'GET', `/api/mticket/${ticket.code.slice(3).toLowerCase()}`)).body.code).toBe(ticket.code);
    const png = await fetch(`${base}/api/mticket/${ticket.code}/qr.png`);
    expect(png.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await png.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
    const page = await fetch(`${base}/mticket/${ticket.code}`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('/assets/mticket.js');
    expect(await (await fetch(`${base}/scan`)).text()).toContain('/assets/scan.js');
    const cards = await call(base, 'POST', `/api/mticket/${ticket.code}/cards`, { theme: 'sports' });
    expect(cards.status).toBe(201);
    expect(cards.body.bingo_cards).toHaveLength(3);
  });

  it('refuses bad input on every route', async () => {
    const { show, ticket } = await book(base, 'B-1');
    const cases: [string, string, unknown, number, string][] = [
      ['POST', '/api/shows', { name: '', venue: 'v', date: '2026-12-24' }, 400, 'invalid_body'],
      ['POST', '/api/shows', { name: 'n', venue: 'v', date: 'tomorrow' }, 400, 'invalid_body'],
      ['POST', '/api/shows', { name: 'n', venue: 'v', date: '2026-12-24', extra: 1 }, 400, 'invalid_body'],
      ['POST', '/api/shows', '{not json', 400, 'invalid_json'],
      ['GET', '/api/shows/nope', undefined, 400, 'invalid_params'],
      ['GET', '/api/shows/s_0000000000', undefined, 404, 'show_not_found'],
      ['POST', '/api/reservations', { show_id: show.id, seat: 'B-2', amount_paid: -1 }, 400, 'invalid_body'],
      ['POST', '/api/reservations', { show_id: show.id, seat: 'B-2', amount_paid: 1.5 }, 400, 'invalid_body'],
      ['POST', '/api/reservations', { show_id: show.id, seat: '', amount_paid: 1 }, 400, 'invalid_body'],
      ['POST', '/api/reservations', { show_id: show.id, seat: 'B-2', amount_paid: 1, theme: 'nope' }, 400, 'invalid_body'],
      ['POST', '/api/reservations', { show_id: 'x', seat: 'B-2', amount_paid: 1 }, 400, 'invalid_body'],
      ['POST', '/api/reservations', { show_id: 's_0000000000', seat: 'B-2', amount_paid: 1 }, 404, 'show_not_found'],
      ['POST', '/api/reservations', { show_id: show.id, seat: 'B-1', amount_paid: 1 }, 409, 'seat_taken'],
      ['GET', '/api/mticket/TK-1234', undefined, 400, 'invalid_params'],
      ['GET', '/api/mticket/TK-OOOOOOOO', undefined, 400, 'invalid_params'],
      ['GET', '/api/mticket/TK-22222222', undefined, 404, 'invalid'],
      ['GET', '/api/mticket/TK-22222222/qr.png', undefined, 404, 'invalid'],
      ['GET', '/mticket/not-a-code', undefined, 400, 'invalid_params'],
      ['POST', `/api/mticket/${ticket.code}/cards`, { theme: 'nope' }, 400, 'invalid_body'],
      ['POST', '/api/mticket/TK-22222222/cards', undefined, 404, 'invalid'],
      ['POST', '/api/checkin', { code: 'TK-1' }, 400, 'invalid_body'],
      ['POST', '/api/checkin', { code: 12345678 }, 400, 'invalid_body'],
      ['POST', '/api/checkin', {}, 400, 'invalid_body'],
      ['POST', '/api/checkin', { code: ticket.code, reservation_id: ticket.reservation_id }, 400, 'invalid_body'],
      ['POST', '/api/checkin', { code: ticket.code, nonce: 'has space' }, 400, 'invalid_body'],
      ['POST', '/api/checkin', { code: ticket.code, source: 'telepathy' }, 400, 'invalid_body'],
      ['POST', '/api/checkin', { code: 'TK-22222222' }, 404, 'invalid'],
      ['POST', '/api/tickets/123/checkin', undefined, 400, 'invalid_params'],
      ['POST', '/api/tickets/r_0000000000/checkin', undefined, 404, 'invalid'],
      ['POST', `/api/tickets/${ticket.reservation_id}/checkin`, { extra: true }, 400, 'invalid_body'],
      ['POST', '/api/tickets/123/cancel', undefined, 400, 'invalid_params'],
      ['POST', '/api/tickets/r_0000000000/cancel', undefined, 404, 'invalid'],
      ['GET', '/api/checkins?limit=0', undefined, 400, 'invalid_query'],
      ['GET', '/api/checkins?limit=x', undefined, 400, 'invalid_query'],
      ['GET', '/api/checkins/audit?reservation_id=bad', undefined, 400, 'invalid_query'],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await call(base, method, path, body);
      expect(r.status, `${method} ${path} ${JSON.stringify(body)}`).toBe(status);
      expect(r.body.error.code, `${method} ${path}`).toBe(code);
    }
    expect((await call(base, 'PUT', '/api/checkin', { code: ticket.code })).status).toBe(405);
    expect((await call(base, 'POST', '/api/checkin', 'code=x', { 'content-type': 'text/plain' })).status).toBe(415);
    // nothing above checked the ticket in, and the malformed and unknown attempts were audited
    expect((await call(base, 'GET', `/api/mticket/${ticket.code}`)).body.status).toBe('entry_allowed');
    const audit = (await call(base, 'GET', '/api/checkins/audit?limit=50')).body.entries as any[];
    expect(audit.some((e) => e.result === 'malformed' && e.code === 'TK-1')).toBe(true);
    expect(audit.some((e) => e.result === 'invalid' && e.code === 'TK-22222222')).toBe(true);
  });

  it('50 simultaneous check-ins over HTTP: exactly one 201; every scanner hears it once', async () => {
    const { ticket } = await book(base, 'C-1');
    const scanners = await Promise.all([connectTopics(base), connectTopics(base)]);
    for (const s of scanners) {
      await s.auth(staffToken);
      await s.subscribe('checkins');
    }
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(base, 'POST', '/api/checkin', { code: ticket.code, source: 'camera', scanner: `phone-${i}`, gate: 'G1' }),
      ),
    );
    const ok = answers.filter((a) => a.status === 201);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.body).toMatchObject({ status: 'ok', ticket: { code: ticket.code, status: 'checked_in' } });
    const refused = answers.filter((a) => a.status === 409);
    expect(refused).toHaveLength(49);
    for (const r of refused) {
      expect(r.body.error.code).toBe('already_redeemed');
      expect(r.body.error.details.first_checkin).toEqual({ at: ok[0]!.body.checkin.at, scanner: ok[0]!.body.checkin.scanner, gate: 'G1' });
    }
    for (const s of scanners) {
      expect(await s.next()).toMatchObject({ type: 'message', topic: 'checkins', data: { type: 'checkin', code: ticket.code, seat: 'C-1' } });
      await expect(s.next(300)).rejects.toThrow(/no frame/);
      s.close();
    }
    const list = (await call(base, 'GET', '/api/checkins')).body.checkins;
    expect(list[0]).toMatchObject({ code: ticket.code, scanner: ok[0]!.body.checkin.scanner });
    const audit = (await call(base, 'GET', `/api/checkins/audit?reservation_id=${ticket.reservation_id}`)).body.entries;
    expect(audit).toHaveLength(50);
    expect(audit.every((e: any) => e.client && e.at && e.scanner.startsWith('phone-') && e.gate === 'G1')).toBe(true);
  });

  it('nonce retries, the id route, cancel and the ticket topic', async () => {
    const { ticket } = await book(base, 'D-1');
    const holder = await connectTopics(base);
    await holder.subscribe(`mticket:${ticket.code}`);
    const first = await call(base, 'POST', `/api/tickets/${ticket.reservation_id}/checkin`, { nonce: 'n-1', scanner: 'legacy' });
    expect(first.status).toBe(201);
    expect((await holder.next()).data).toMatchObject({ type: 'checkin', code: ticket.code, scanner: 'legacy', source: 'api' });
    const retry = await call(base, 'POST', '/api/checkin', { code: ticket.code, nonce: 'n-1' });
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual({ ...first.body, replayed: true });
    expect((await call(base, 'POST', `/api/tickets/${ticket.reservation_id}/checkin`)).status).toBe(409);
    holder.close();

    const other = (await book(base, 'D-2')).ticket;
    const cancelled = await call(base, 'POST', `/api/tickets/${other.reservation_id}/cancel`, { reason: '환불' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', cancel_reason: '환불' });
    const refused = await call(base, 'POST', '/api/checkin', { code: other.code });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ code: 'canceled', details: { ticket: { code: other.code, status: 'cancelled' } } });
    expect((await call(base, 'POST', `/api/tickets/${ticket.reservation_id}/cancel`)).body.error.code).toBe('already_redeemed');
  });
});

describe('the door counter', () => {
  let maru: Maru;
  afterAll(() => maru.stop());
  it('GET /api/shows/:id/counts: checked in over the tickets of one show (cancelled apart), for staff and scanner devices', async () => {
    maru = await start();
    const base = maru.url;
    const { show, ticket } = await book(base, 'A-1');
    const seat = (s: string) => call(base, 'POST', '/api/reservations', { show_id: show.id, seat: s, amount_paid: 45000 });
    const b = (await seat('A-2')).body;
    const c = (await seat('A-3')).body;
    await book(base, 'A-1'); // another show's ticket is not counted
    expect((await call(base, 'POST', '/api/checkin', { code: ticket.code })).status).toBe(201);
    expect((await call(base, 'POST', `/api/tickets/${c.reservation_id}/cancel`)).status).toBe(200);
    expect(b.status).toBe('entry_allowed');
    const device = bearer(await deviceToken(base));
    const counts = await rawCall(base, 'GET', `/api/shows/${show.id}/counts`, undefined, device);
    expect(counts.status).toBe(200);
    expect(counts.body).toEqual({ show_id: show.id, tickets: 2, checked_in: 1, cancelled: 1 });
    // the check-in answer names the show the counter follows
    expect((await call(base, 'POST', '/api/checkin', { code: b.code })).body.ticket.show_id).toBe(show.id);
    expect((await rawCall(base, 'GET', `/api/shows/${show.id}/counts`)).status).toBe(401);
    expect((await call(base, 'GET', '/api/shows/s_0000000000/counts')).status).toBe(404);
  });
});

describe('ticket credentials', () => {
  let maru: Maru;
  let base: string;
  beforeAll(async () => {
    maru = await start();
    base = maru.url;
  });
  afterAll(() => maru.stop());

  it('refuses every staff route without a token (401), with a wrong one (401) and with another role (403); nothing changes', async () => {
    const { show, ticket } = await book(base, 'K-1');
    const editor = await signIn(base, ['editor']);
    const routes: [string, string, unknown, 'staff' | 'scanner'][] = [
      ['POST', '/api/shows', { name: 'n', venue: 'v', date: '2026-12-24' }, 'staff'],
      ['POST', '/api/reservations', { show_id: show.id, seat: 'K-2', amount_paid: 1 }, 'staff'],
      ['POST', '/api/checkin', { code: ticket.code }, 'scanner'],
      ['POST', `/api/tickets/${ticket.reservation_id}/checkin`, undefined, 'scanner'],
      ['POST', `/api/tickets/${ticket.reservation_id}/cancel`, undefined, 'staff'],
      ['GET', '/api/checkins', undefined, 'scanner'],
      ['GET', '/api/checkins/audit', undefined, 'staff'],
    ];
    const device = await deviceToken(base, 'B', 'door-2');
    for (const [method, path, body, who] of routes) {
      const none = await rawCall(base, method, path, body);
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.headers.get('www-authenticate'), path).toMatch(/^Bearer/);
      expect((await rawCall(base, method, path, body, bearer('mt_wrong'))).status, path).toBe(401);
      expect((await rawCall(base, method, path, body, bearer(editor))).status, path).toBe(403);
      // a scanner device may check in and read the list, not manage shows, cancel or read the audit
      if (who === 'staff') expect((await rawCall(base, method, path, body, bearer(device))).status, path).toBe(403);
    }
    const t = await call(base, 'GET', `/api/mticket/${ticket.code}`);
    expect(t.body.status).toBe('entry_allowed');
    // the check-in topic needs staff or a device too
    const ws = await connectTopics(base);
    ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'checkins' }));
    expect(await ws.next()).toMatchObject({ type: 'error', code: 'unauthorized' });
    await ws.auth(editor);
    ws.ws.send(JSON.stringify({ type: 'subscribe', topic: 'checkins' }));
    expect(await ws.next()).toMatchObject({ type: 'error', code: 'forbidden' });
    await ws.auth(device);
    await ws.subscribe('checkins');
    ws.close();
  });

  it('a device token checks in under its own scanner name and gate, whatever the body says', async () => {
    const { ticket } = await book(base, 'K-3');
    const device = await deviceToken(base, '동문', 'door-east');
    const r = await rawCall(base, 'POST', '/api/checkin', { code: ticket.code, scanner: 'someone-else', gate: 'Z' }, bearer(device));
    expect(r.status).toBe(201);
    expect(r.body.checkin).toMatchObject({ scanner: 'door-east', gate: '동문' });
    const audit = (await call(base, 'GET', `/api/checkins/audit?reservation_id=${ticket.reservation_id}`)).body.entries;
    expect(audit[0]).toMatchObject({ scanner: 'door-east', gate: '동문', result: 'ok' });
    expect(audit[0].client).toMatch(/^device:d_[0-9a-f]{12}$/);
  });
});

describe('ticket rate limits', () => {
  it('limits manual guesses per client with 429 and Retry-After; camera scans are not counted; the window passes', async () => {
    const clock = new ManualClock(T0);
    const maru = await start(clock);
    try {
      const base = maru.url;
      const { ticket } = await book(base, 'R-1');
      for (let i = 0; i < 20; i++) {
        expect((await call(base, 'POST', '/api/checkin', { code: `TK-2222222${'23456789ABCDEFGHJKMNP'[i]}` })).status).toBe(404);
      }
      // each step at its own millisecond: the audit is newest first across its lists, and entries of
      // one millisecond in two lists (the show's, the one of unknown codes) have no order between them
      clock.advance(1);
      const limited = await call(base, 'POST', '/api/checkin', { code: ticket.code });
      expect(limited.status).toBe(429);
      expect(limited.body.error).toMatchObject({ code: 'rate_limited', details: { limit: 20, window_s: 60 } });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      // a camera scan still passes (it is not a guess), and the refused attempt is audited
      clock.advance(1);
      expect((await call(base, 'POST', '/api/checkin', { code: ticket.code, source: 'camera' })).status).toBe(201);
      const audit = (await call(base, 'GET', '/api/checkins/audit?limit=5')).body.entries;
      expect(audit[1]).toMatchObject({ result: 'rate_limited', code: ticket.code });
      clock.advance(60_000);
      expect((await call(base, 'POST', '/api/checkin', { code: ticket.code })).status).toBe(409);
    } finally {
      await maru.stop();
    }
  });

  it('counts manual entries per device: one device at its limit does not hold up another on the same address', async () => {
    const maru = await start();
    try {
      const base = maru.url;
      const { ticket } = await book(base, 'R-2');
      const d1 = bearer(await deviceToken(base, 'A', 'door-1'));
      const d2 = bearer(await deviceToken(base, 'A', 'door-2'));
      for (let i = 0; i < 20; i++) await rawCall(base, 'POST', '/api/checkin', { code: 'TK-22222222' }, d1);
      expect((await rawCall(base, 'POST', '/api/checkin', { code: ticket.code }, d1)).status).toBe(429);
      expect((await rawCall(base, 'POST', '/api/checkin', { code: ticket.code }, d2)).status).toBe(201);
    } finally {
      await maru.stop();
    }
  });

  it('limits ticket lookups per client', async () => {
    const maru = await start();
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 121; i++) statuses.push((await call(maru.url, 'GET', '/api/mticket/TK-22222222')).status);
      expect(statuses.slice(0, 120).every((s) => s === 404)).toBe(true);
      expect(statuses[120]).toBe(429);
    } finally {
      await maru.stop();
    }
  });
});
