import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMaru, type Maru } from '../../src/app.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { createBus } from '../../src/bus.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { K } from '../../src/ticket/keys.js';
import { TicketService } from '../../src/ticket/service.js';
import { legacyReservation } from '../support/ticket.js';
import { AUTH_TEST_ENV, bearer, deviceToken, signIn } from '../support/auth.js';
import { call } from '../support/http.js';
import { tempDir } from '../support/process.js';

const T0 = Date.parse('2026-12-24T18:00:00+09:00');

describe('the back office lists: GET /api/shows and GET /api/shows/:id/tickets', () => {
  let maru: Maru;
  let base: string;
  let H: Record<string, string>;
  const clock = new ManualClock(T0);
  beforeAll(async () => {
    maru = await startMaru(loadConfig({ HOST: '127.0.0.1', PORT: '0', DATA_DIR: tempDir('ticket-lists'), LOG_LEVEL: 'silent', ...AUTH_TEST_ENV }), {
      clock,
      logger: pino({ level: 'silent' }),
    });
    base = maru.url;
    H = bearer(await signIn(base, ['staff']));
  });
  afterAll(() => maru.stop());

  const newShow = async (name: string) => {
    clock.advance(1000);
    const r = await call(base, 'POST', '/api/shows', { name, venue: '블루홀', date: '2026-12-24T20:00:00+09:00' }, H);
    expect(r.status).toBe(201);
    return r.body as { id: string };
  };
  const book = async (show_id: string, seat: string, holder?: string) => {
    clock.advance(1000);
    const r = await call(base, 'POST', '/api/reservations', { show_id, seat, amount_paid: 45000, ...(holder ? { holder } : {}) }, H);
    expect(r.status).toBe(201);
    return r.body as { reservation_id: string; code: string };
  };

  it('lists shows newest first with their door counters, paged', async () => {
    const a = await newShow('첫 공연');
    const b = await newShow('둘째 공연');
    const t1 = await book(b.id, 'A-1', '김민지');
    await book(b.id, 'A-2');
    expect((await call(base, 'POST', '/api/checkin', { code: t1.code }, H)).status).toBe(201);
    const all = await call(base, 'GET', '/api/shows', undefined, H);
    expect(all.status).toBe(200);
    expect(all.headers.get('cache-control')).toBe('no-store');
    const ids = (all.body.shows as { id: string }[]).map((s) => s.id);
    expect(ids.indexOf(b.id)).toBeLessThan(ids.indexOf(a.id));
    expect(all.body.shows.find((s: { id: string }) => s.id === b.id).counts).toEqual({ tickets: 2, checked_in: 1, cancelled: 0 });
    expect(all.body.page).toEqual({ limit: 50, offset: 0, total: ids.length });
    const second = await call(base, 'GET', '/api/shows?limit=1&offset=1', undefined, H);
    expect(second.body.shows).toHaveLength(1);
    expect(second.body.shows[0].id).toBe(ids[1]);
    expect(second.body.page).toEqual({ limit: 1, offset: 1, total: ids.length });
  });

  it('lists a show\'s bookings newest first, with check-in and cancellation, filtered by holder or seat', async () => {
    const show = await newShow('재즈 나이트');
    const other = await newShow('다른 공연');
    await book(other.id, 'B-1', '김민지');
    const t1 = await book(show.id, 'B-1', '김민지');
    const t2 = await book(show.id, 'B-2', 'Lee Jun');
    const t3 = await book(show.id, 'C-7');
    expect((await call(base, 'POST', '/api/checkin', { code: t1.code, gate: 'G1' }, H)).status).toBe(201);
    expect((await call(base, 'POST', `/api/tickets/${t2.reservation_id}/cancel`, { reason: '고객 요청' }, H)).status).toBe(200);
    const list = await call(base, 'GET', `/api/shows/${show.id}/tickets`, undefined, H);
    expect(list.status).toBe(200);
    expect(list.body.tickets.map((t: { seat: string }) => t.seat)).toEqual(['C-7', 'B-2', 'B-1']);
    expect(list.body.page).toEqual({ limit: 50, offset: 0, total: 3 });
    const [c7, b2, b1] = list.body.tickets;
    expect(c7).toMatchObject({ status: 'entry_allowed', holder: null, amount_paid: 45000, page_url: `/mticket/${t3.code}` });
    expect(b2).toMatchObject({ status: 'cancelled', cancel_reason: '고객 요청', holder: 'Lee Jun' });
    expect(b2.cancelled_at).toEqual(expect.any(String));
    expect(b1).toMatchObject({ status: 'checked_in', checked_in_by: { gate: 'G1' }, code: t1.code });
    // q: a piece of the holder or the seat, any case
    const byHolder = await call(base, 'GET', `/api/shows/${show.id}/tickets?q=${encodeURIComponent('민지')}`, undefined, H);
    expect(byHolder.body.tickets.map((t: { code: string }) => t.code)).toEqual([t1.code]);
    const bySeat = await call(base, 'GET', `/api/shows/${show.id}/tickets?q=b-`, undefined, H);
    expect(bySeat.body.tickets.map((t: { seat: string }) => t.seat)).toEqual(['B-2', 'B-1']);
    expect(bySeat.body.page.total).toBe(2);
    const paged = await call(base, 'GET', `/api/shows/${show.id}/tickets?q=b-&limit=1&offset=1`, undefined, H);
    expect(paged.body).toMatchObject({ tickets: [{ seat: 'B-1' }], page: { limit: 1, offset: 1, total: 2 } });
    expect((await call(base, 'GET', `/api/shows/${show.id}/tickets?q=jun`, undefined, H)).body.tickets).toHaveLength(1);
    // the show's audit: attempts on its tickets only
    expect((await call(base, 'POST', '/api/checkin', { code: t1.code }, H)).status).toBe(409);
    const audit = await call(base, 'GET', `/api/checkins/audit?show_id=${show.id}`, undefined, H);
    expect(audit.body.entries.map((e: { result: string }) => e.result)).toEqual(['already_redeemed', 'ok']);
    expect((await call(base, 'GET', `/api/checkins/audit?show_id=${other.id}`, undefined, H)).body.entries).toEqual([]);
  });

  it('refuses bad input with the shared error shape (400), an unknown show with 404', async () => {
    const show = await newShow('잘못된 입력');
    const cases: [string, string][] = [
      ['/api/shows?limit=0', 'invalid_query'],
      ['/api/shows?limit=101', 'invalid_query'],
      ['/api/shows?limit=x', 'invalid_query'],
      ['/api/shows?offset=-1', 'invalid_query'],
      ['/api/shows?offset=100001', 'invalid_query'],
      ['/api/shows?cursor=1', 'invalid_query'],
      ['/api/shows/nope/tickets', 'invalid_params'],
      [`/api/shows/${show.id}/tickets?limit=1.5`, 'invalid_query'],
      [`/api/shows/${show.id}/tickets?q=`, 'invalid_query'],
      [`/api/shows/${show.id}/tickets?q=${'x'.repeat(101)}`, 'invalid_query'],
      [`/api/shows/${show.id}/tickets?q=a&q=b`, 'invalid_query'],
      [`/api/shows/${show.id}/tickets?extra=1`, 'invalid_query'],
      ['/api/checkins/audit?show_id=bad', 'invalid_query'],
      [`/api/checkins/audit?show_id=${show.id}&reservation_id=r_0000000000`, 'invalid_query'],
    ];
    for (const [path, code] of cases) {
      const r = await call(base, 'GET', path, undefined, H);
      expect(r.status, path).toBe(400);
      expect(r.body.error, path).toMatchObject({ code, message: expect.any(String) });
    }
    const missing = await call(base, 'GET', '/api/shows/s_0000000000/tickets', undefined, H);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('show_not_found');
  });

  it('refuses a missing (401), unknown (401) and wrong-role (403) credential; a scanner device is refused too', async () => {
    const show = await newShow('권한');
    const editor = bearer(await signIn(base, ['editor']));
    const device = bearer(await deviceToken(base, 'A', 'door-1'));
    for (const path of ['/api/shows', `/api/shows/${show.id}/tickets`, `/api/shows/${show.id}/tickets?q=a`]) {
      const none = await call(base, 'GET', path);
      expect(none.status, path).toBe(401);
      expect(none.body.error.code, path).toBe('unauthorized');
      expect(none.headers.get('www-authenticate'), path).toMatch(/^Bearer/);
      expect((await call(base, 'GET', path, undefined, bearer('mt_wrong'))).status, path).toBe(401);
      for (const who of [editor, device]) {
        const wrong = await call(base, 'GET', path, undefined, who);
        expect(wrong.status, path).toBe(403);
        expect(wrong.body.error.code, path).toBe('forbidden');
      }
    }
  });
});

describe('a show of before the partitions (the global layout) and before the per-show index', () => {
  it('is indexed once from every reservation; bookings, check-ins and cancels after that keep its layout', async () => {
    const path = tempDir('ticket-lists-legacy');
    // what the hub wrote before: the show, its reservations and codes under the global keys
    const old = await openLmdbStore({ path, partitionCheck: false });
    const showId = 's_oldshow001';
    await old.set(K.show(showId), { id: showId, name: '옛 공연', venue: '홀', date: '2026-12-24', created_at: new Date(T0).toISOString() });
    await old.index(K.shows, showId, T0);
    await old.set(K.count(showId, 'tickets'), 2);
    for (const [i, seat] of ['A-1', 'A-2'].entries()) {
      const id = `r_oldres000${i}`;
      await legacyReservation(old, id, `TK-OLDCODE${i}`, { show_id: showId, seat, created_at: new Date(T0 + 1000 * (i + 1)).toISOString() });
      await old.index(K.reservations, id, T0 + 1000 * (i + 1));
      await old.set(K.seat(showId, seat), id);
    }
    await old.close();
    // the global layout's updates span aggregates (one Redis only, as before): no partition check
    const store = await openLmdbStore({ path, partitionCheck: false });
    const clock = new ManualClock(T0 + 10_000);
    const service = new TicketService({ store, clock, bus: createBus(store, 'lists-legacy') });
    const other = await service.createShow({ name: '새 공연', venue: '홀', date: '2026-12-25' });
    await service.reserve({ show_id: other.id, seat: 'A-1', amount_paid: 1000 });
    expect((await service.bookings(showId, { limit: 10, offset: 0 })).tickets.map((t) => t.seat)).toEqual(['A-2', 'A-1']);
    expect(await store.get(K.showIndexed(showId))).toBe(1);
    expect((await service.shows({ limit: 10, offset: 0 })).shows.map((x) => x.id)).toEqual([other.id, showId]);
    // a seat of before is taken; a new booking of the old show goes under the global keys
    expect(await service.reserve({ show_id: showId, seat: 'A-1', amount_paid: 1 }).catch((e: { code: string }) => e.code)).toBe('seat_taken');
    clock.advance(1000);
    const r = await service.reserve({ show_id: showId, seat: 'A-3', amount_paid: 1000 });
    expect(await store.get(K.reservation(r.id))).toMatchObject({ seat: 'A-3' });
    const again = await service.bookings(showId, { limit: 10, offset: 0 });
    expect(again.tickets.map((t) => t.seat)).toEqual(['A-3', 'A-2', 'A-1']);
    expect(again.page.total).toBe(3);
    // a ticket of before checks in and another cancels, by code and by id
    expect(await service.checkInByCode('TK-OLDCODE0', { scanner: 'door' })).toMatchObject({ status: 'ok', ticket: { seat: 'A-1' } });
    expect(await service.cancel('r_oldres0001')).toMatchObject({ status: 'cancelled' });
    expect(await service.counts(showId)).toEqual({ show_id: showId, tickets: 2, checked_in: 1, cancelled: 1 });
    expect((await service.auditLog({ limit: 10 }))[0]).toMatchObject({ result: 'ok', code: 'TK-OLDCODE0' });
    expect((await service.auditLog({ limit: 10, show_id: showId }))[0]).toMatchObject({ result: 'ok', code: 'TK-OLDCODE0' });
    expect((await service.recentCheckIns(10)).map((e) => e.code)).toEqual(['TK-OLDCODE0']);
    await store.close();
  });
});

