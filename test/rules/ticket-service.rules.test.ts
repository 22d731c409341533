import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import { partitionOf, type Json, type Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal as refused } from '../support/refusal.js';
import { legacyReservation } from '../support/ticket.js';

// The ticket service's rules (src/ticket/service.ts; doc "mobile ticket"): a booking is atomic with
// its code, seat claim and counter, 2 bingo cards, 404 show_not_found, 409 seat_taken, 400
// unknown_theme, a new code drawn on a collision up to 8 times; cards up to 4 (409 cards_full); a
// ticket without cards gets 2 on its first lookup, once; cancel frees the seat, is idempotent and
// refused for a used ticket (409 already_redeemed); unknown codes and ids 404 invalid. The module
// is loaded afresh in each test (and the code generator replaced where a collision is wanted).
const load = async () => {
  vi.resetModules();
  return { ...(await import('../../src/ticket/service.js')), ...(await import('../../src/errors.js')) };
};
afterEach(() => {
  vi.doUnmock('../../src/ticket/code.js');
});

const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const stores: Store[] = [];
afterAll(() => Promise.all(stores.map((s) => s.close())));

async function setup() {
  const { TicketService } = await load();
  const store = await openLmdbStore({ path: tempDir('ticket-rules') });
  stores.push(store);
  const { store: recording, writes, race } = recordingStore(store);
  const clock = new ManualClock(T0);
  const events: { topic: string; msg: Record<string, unknown> }[] = [];
  const bus = { emit: (topic: string, msg: Json) => void events.push({ topic, msg: msg as Record<string, unknown> }) };
  const service = new TicketService({ store: recording, clock, bus: bus as never });
  const show = await service.createShow({ name: '겨울 콘서트', venue: '세종문화회관', date: '2026-12-24T19:30:00+09:00' });
  return { service, store, clock, events, writes, show, race };
}

const refusal = (p: Promise<unknown>) => refused(p, { details: true });

describe('shows', () => {
  it('creates a show with its index and a ticket counter at 0; 404 for an unknown one', async () => {
    const { service, writes, show, store } = await setup();
    expect(show).toEqual({ id: expect.stringMatching(/^s_[A-Za-z0-9_-]{10}$/), name: '겨울 콘서트', venue: '세종문화회관', date: '2026-12-24T19:30:00+09:00', created_at: new Date(T0).toISOString() });
    // the show is one aggregate (its tickets' keys all under it: docs/partitions.md), marked so; the
    // list of shows is its partition's; its booking index is complete from the start
    expect(writes).toEqual([
      { op: 'set', key: `ticket:show:${show.id}`, value: show },
      { op: 'set', key: `ticket:show:${show.id}:partitioned`, value: 1 },
      { op: 'index', key: `ticket:shows:{#${partitionOf(`ticket:show:${show.id}`)}}`, member: show.id, score: T0 },
      { op: 'set', key: `ticket:show:${show.id}:count:tickets`, value: 0 },
    ]);
    expect(await service.show(show.id)).toEqual(show);
    expect(await store.get(`ticket:show:${show.id}:count:tickets`)).toBe(0);
    expect(await refusal(service.show('s_nope000000'))).toMatchObject({ status: 404, code: 'show_not_found', message: 'no show s_nope000000' });
    expect((await refusal(service.counts('s_nope000000'))).code).toBe('show_not_found');
  });
});

describe('booking', () => {
  it('stores the reservation with its code, seat and counter in one write, with 2 cards', async () => {
    const { service, writes, show, clock, store } = await setup();
    writes.length = 0;
    clock.advance(5_000);
    const r = await service.reserve({ show_id: show.id, seat: 'A-1', amount_paid: 55_000, holder: '민지' });
    expect(r).toMatchObject({
      id: expect.stringMatching(/^r_[A-Za-z0-9_-]{10}$/),
      show_id: show.id,
      show_name: '겨울 콘서트',
      venue: '세종문화회관',
      date: '2026-12-24T19:30:00+09:00',
      seat: 'A-1',
      amount_paid: 55_000,
      holder: '민지',
      status: 'entry_allowed',
      created_at: new Date(T0 + 5_000).toISOString(),
      checkin: null,
      cancelled_at: null,
      cancel_reason: null,
    });
    expect(r.bingo_cards!.map((c) => c.no)).toEqual([1, 2]);
    // one update of the show's aggregate; the code's and the id's pointers to the show written before it, on their own
    expect(writes).toEqual([
      { op: 'set', key: `ticket:show:${show.id}:res:${r.id}`, value: r },
      { op: 'set', key: `ticket:show:${show.id}:seat:A-1`, value: r.id },
      { op: 'index', key: `ticket:reservations:{#${partitionOf(`ticket:show:${show.id}`)}}`, member: r.id, score: T0 + 5_000 },
      { op: 'index', key: `ticket:show:${show.id}:reservations`, member: r.id, score: T0 + 5_000 },
      { op: 'incr', key: `ticket:show:${show.id}:count:tickets`, by: 1 },
    ]);
    expect(await store.get(`ticket:code:${r.code}`)).toEqual({ show_id: show.id, id: r.id });
    expect(await store.get(`ticket:rid:${r.id}`)).toBe(show.id);
    expect((await service.reserve({ show_id: show.id, seat: 'A-2', amount_paid: 0 })).holder).toBeNull();
    expect((await service.counts(show.id)).tickets).toBe(2);
  });

  it('refuses an unknown show (404), a taken seat (409) and an unknown theme (400)', async () => {
    const { service, show } = await setup();
    expect(await refusal(service.reserve({ show_id: 's_nope000000', seat: 'A-1', amount_paid: 0 }))).toMatchObject({ status: 404, code: 'show_not_found', message: 'no show s_nope000000' });
    await service.reserve({ show_id: show.id, seat: 'A-1', amount_paid: 0 });
    expect(await refusal(service.reserve({ show_id: show.id, seat: 'A-1', amount_paid: 0 }))).toEqual({
      status: 409,
      code: 'seat_taken',
      message: 'seat A-1 of this show is already booked',
      details: { seat: 'A-1' },
    });
    expect(await refusal(service.reserve({ show_id: show.id, seat: 'A-3', amount_paid: 0, theme: 'cars' }))).toMatchObject({ status: 400, code: 'unknown_theme', message: 'no bingo theme cars' });
    const food = await service.reserve({ show_id: show.id, seat: 'A-4', amount_paid: 0, theme: 'food' });
    expect(food.bingo_cards!.map((c) => c.theme)).toEqual(['food', 'food']);
  });

  it('draws another code on a collision, 8 times at most, then answers 503 code_space_busy', async () => {
    const drawn: string[] = [];
    const queue = ['TK-TAKEN01', 'TK-TAKEN01', 'TK-FRESH001'];
    vi.doMock('../../src/ticket/code.js', async (orig) => ({
      ...(await orig<Record<string, unknown>>()),
      generateCode: () => {
        const c = queue.length ? queue.shift()! : 'TK-TAKEN01';
        drawn.push(c);
        return c;
      },
    }));
    const { service, show, store } = await setup();
    await store.set('ticket:code:TK-TAKEN01', 'r_someone000');
    const r = await service.reserve({ show_id: show.id, seat: 'B-1', amount_paid: 0 });
    expect(r.code).toBe('TK-FRESH001');
    expect(drawn).toEqual(['TK-TAKEN01', 'TK-TAKEN01', 'TK-FRESH001']);
    drawn.length = 0;
    expect(await refusal(service.reserve({ show_id: show.id, seat: 'B-2', amount_paid: 0 }))).toMatchObject({ status: 503, code: 'code_space_busy', message: 'could not draw an unused ticket code' });
    expect(drawn).toHaveLength(8);
    expect(await store.get(`ticket:show:${show.id}:seat:B-2`)).toBeUndefined();
  });
});

describe('the ticket', () => {
  it('shows the ticket by its code with its QR, cards and page; 404 invalid for an unknown code or id', async () => {
    const { service, show } = await setup();
    const booked = await service.book({ show_id: show.id, seat: 'C-1', amount_paid: 10_000, holder: '지우' });
    expect(booked).toMatchObject({
      reservation_id: expect.stringMatching(/^r_/),
      show_id: show.id,
      seat: 'C-1',
      status: 'entry_allowed',
      amount_paid: 10_000,
      holder: '지우',
      checked_in_at: null,
      checked_in_by: null,
      cancelled_at: null,
      qr_code: booked.code,
      qr_image: expect.stringMatching(/^data:image\/png;base64,/),
      page_url: `/mticket/${booked.code}`,
    });
    expect(booked.bingo_cards).toHaveLength(2);
    const again = await service.ticket(booked.code);
    expect(again.bingo_cards).toEqual(booked.bingo_cards);
    const png = await service.qrPng(booked.code);
    expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
    expect(await refusal(service.ticket('TK-UNKNOWN1'))).toEqual({ status: 404, code: 'invalid', message: 'no ticket with code TK-UNKNOWN1', details: { code: 'TK-UNKNOWN1' } });
    expect((await refusal(service.qrPng('TK-UNKNOWN1'))).code).toBe('invalid');
    expect(await refusal(service.reservation('r_nope000000'))).toEqual({ status: 404, code: 'invalid', message: 'no ticket for reservation r_nope000000', details: { reservation_id: 'r_nope000000' } });
    expect((await service.reservation(booked.reservation_id)).code).toBe(booked.code);
  });

  it('gives a ticket without cards 2 on its first lookup, once', async () => {
    const { service, store, writes, race } = await setup();
    await legacyReservation(store, 'r_legacy0001', 'TK-LEGACY01');
    writes.length = 0;
    const first = await service.ticket('TK-LEGACY01');
    expect(first.bingo_cards.map((c) => c.no)).toEqual([1, 2]);
    expect(service.cardMigrations).toBe(1);
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatchObject({ op: 'set', key: 'ticket:reservation:r_legacy0001' });
    const second = await service.ticket('TK-LEGACY01');
    expect(second.bingo_cards).toEqual(first.bingo_cards);
    expect(service.cardMigrations).toBe(1);
    expect(writes).toHaveLength(1);
    // another process gave the cards between the lookup and the update: its cards win, no write
    const other = { ...((await store.get('ticket:reservation:r_legacy0001')) as Record<string, Json>), id: 'r_legacy0002', code: 'TK-LEGACY02', bingo_cards: null };
    await store.set('ticket:reservation:r_legacy0002', other);
    await store.set('ticket:code:TK-LEGACY02', 'r_legacy0002');
    race.next = async () => {
      await store.set('ticket:reservation:r_legacy0002', { ...other, bingo_cards: first.bingo_cards as unknown as Json });
    };
    const raced = await service.ticket('TK-LEGACY02');
    expect(raced.bingo_cards).toEqual(first.bingo_cards);
    expect(service.cardMigrations).toBe(1);
    expect(writes).toHaveLength(1);
    // the reservation removed between the lookup and the update: 404 invalid
    await store.set('ticket:reservation:r_legacy0003', { ...other, id: 'r_legacy0003', code: 'TK-LEGACY03' });
    await store.set('ticket:code:TK-LEGACY03', 'r_legacy0003');
    race.next = async () => {
      await store.del('ticket:reservation:r_legacy0003');
    };
    expect(await refusal(service.ticket('TK-LEGACY03'))).toMatchObject({ status: 404, code: 'invalid', message: 'no ticket for reservation r_legacy0003' });
    // the code pointing at a reservation that is gone: 404 invalid
    await store.set('ticket:code:TK-ORPHAN01', 'r_gone000000');
    expect((await refusal(service.ticket('TK-ORPHAN01'))).code).toBe('invalid');
  });

  it('adds cards up to 4, numbered on, in the ticket theme unless another is named; then 409 cards_full', async () => {
    const { service, show } = await setup();
    const b = await service.book({ show_id: show.id, seat: 'D-1', amount_paid: 0, theme: 'animals' });
    const three = await service.addCard(b.code);
    expect(three.bingo_cards.map((c) => [c.no, c.theme])).toEqual([
      [1, 'animals'],
      [2, 'animals'],
      [3, 'animals'],
    ]);
    const four = await service.addCard(b.code, 'sports');
    expect(four.bingo_cards.map((c) => [c.no, c.theme])).toEqual([
      [1, 'animals'],
      [2, 'animals'],
      [3, 'animals'],
      [4, 'sports'],
    ]);
    expect(await refusal(service.addCard(b.code))).toEqual({ status: 409, code: 'cards_full', message: 'a ticket carries at most 4 bingo cards', details: { max: 4 } });
    expect(await refusal(service.addCard(b.code, 'cars'))).toMatchObject({ status: 400, code: 'unknown_theme', message: 'no bingo theme cars' });
    expect((await service.ticket(b.code)).bingo_cards).toHaveLength(4);
  });
});

describe('cancel', () => {
  it('frees the seat, moves the counters, tells the ticket page once, and answers the same again', async () => {
    const { service, show, clock, events, writes, store } = await setup();
    const b = await service.book({ show_id: show.id, seat: 'E-1', amount_paid: 0 });
    writes.length = 0;
    clock.advance(60_000);
    const at = new Date(T0 + 60_000).toISOString();
    const c = await service.cancel(b.reservation_id, '일정 변경');
    expect(c).toMatchObject({ reservation_id: b.reservation_id, code: b.code, status: 'cancelled', cancelled_at: at, cancel_reason: '일정 변경' });
    expect(writes.map((w) => [w.op, w.key, (w as { by?: number }).by])).toEqual([
      ['set', `ticket:show:${show.id}:res:${b.reservation_id}`, undefined],
      ['del', `ticket:show:${show.id}:seat:E-1`, undefined],
      ['incr', `ticket:show:${show.id}:count:tickets`, -1],
      ['incr', `ticket:show:${show.id}:count:cancelled`, 1],
    ]);
    expect(events).toEqual([{ topic: `mticket:${b.code}`, msg: { type: 'cancelled', code: b.code, at } }]);
    expect(await service.counts(show.id)).toMatchObject({ tickets: 0, cancelled: 1 });
    clock.advance(1_000);
    expect(await service.cancel(b.reservation_id)).toEqual(c);
    expect(events).toHaveLength(1);
    expect(await store.get(`ticket:show:${show.id}:seat:E-1`)).toBeUndefined();
    // the seat can be booked again
    expect((await service.book({ show_id: show.id, seat: 'E-1', amount_paid: 0 })).seat).toBe('E-1');
    const none = await service.cancel((await service.book({ show_id: show.id, seat: 'E-2', amount_paid: 0 })).reservation_id);
    expect(none.cancel_reason).toBeNull();
  });

  it('refuses a checked-in ticket (409 already_redeemed with the first check-in) and an unknown one (404)', async () => {
    const { service, show, clock } = await setup();
    const b = await service.book({ show_id: show.id, seat: 'F-1', amount_paid: 0 });
    clock.advance(1_000);
    const ok = await service.checkInByCode(b.code, { scanner: 'door-1', gate: 'A', nonce: 'n1' });
    expect(ok).toMatchObject({ status: 'ok', replayed: false });
    expect(await service.ticket(b.code)).toMatchObject({ status: 'checked_in', checked_in_at: new Date(T0 + 1_000).toISOString(), checked_in_by: { scanner: 'door-1', gate: 'A' } });
    expect(await refusal(service.cancel(b.reservation_id))).toEqual({
      status: 409,
      code: 'already_redeemed',
      message: 'a checked-in ticket cannot be cancelled',
      details: { first_checkin: { at: new Date(T0 + 1_000).toISOString(), scanner: 'door-1', gate: 'A' } },
    });
    expect(await refusal(service.cancel('r_nope000000'))).toEqual({ status: 404, code: 'invalid', message: 'no ticket for reservation r_nope000000', details: { reservation_id: 'r_nope000000' } });
    expect((await service.recentCheckIns(10)).map((e) => e.code)).toEqual([b.code]);
    expect((await service.auditLog({ limit: 10, reservation_id: b.reservation_id })).map((e) => e.result)).toEqual(['ok']);
    expect((await refusal(service.checkInById(b.reservation_id, { scanner: 'door-2' }))).code).toBe('already_redeemed');
    // the list of every attempt is merged from the partitions' by time: the refusal a moment later
    clock.advance(1);
    await service.recordRefusal('malformed', { code: 'x', via: 'code' });
    expect((await service.auditLog({ limit: 10 })).map((e) => e.result)).toEqual(['malformed', 'already_redeemed', 'ok']);
  });
});

describe('the lists and offline settlement the service hands on', () => {
  it('shows and bookings, 404 for an unknown show', async () => {
    const { service, show } = await setup();
    const r = await service.reserve({ show_id: show.id, seat: 'B-7', amount_paid: 10_000, holder: '수아' });
    const shows = await service.shows({ limit: 10, offset: 0 });
    expect(JSON.stringify(shows)).toContain(show.id);
    const bookings = await service.bookings(show.id, { limit: 10, offset: 0 });
    expect(JSON.stringify(bookings)).toContain(r.code);
    expect(JSON.stringify(await service.bookings(show.id, { limit: 10, offset: 0, q: '없는사람' }))).not.toContain(r.code);
    expect((await refusal(service.bookings('s_nope000000', { limit: 10, offset: 0 }))).code).toBe('show_not_found');
  });

  it('the signed check-in list of a show, 404 for an unknown one', async () => {
    const { service, show } = await setup();
    const r = await service.reserve({ show_id: show.id, seat: 'C-1', amount_paid: 0 });
    const list = await service.checkInList(show.id);
    expect(list.version).toEqual(expect.any(String));
    expect(JSON.stringify(list)).toContain(show.id);
    expect(r.code).toMatch(/^TK-/);
    expect((await refusal(service.checkInList('s_nope000000'))).code).toBe('show_not_found');
  });

  it('settles offline scans one after another, in the order given, a result each; conflicts of a show or of all', async () => {
    const { service, show, clock } = await setup();
    const a = await service.reserve({ show_id: show.id, seat: 'D-1', amount_paid: 0 });
    const b = await service.reserve({ show_id: show.id, seat: 'D-2', amount_paid: 0 });
    const at = new Date(clock.now() - 60_000).toISOString();
    const scans = [
      { id: 'sc-1', code: a.code, scanned_at: at, source: 'camera' as const },
      { id: 'sc-2', code: 'TK-99999999', scanned_at: at, source: 'manual' as const },
      { id: 'sc-3', code: b.code, scanned_at: at, source: 'camera' as const },
      // the same ticket again from this device: the first scan stands, this one is a conflict
      { id: 'sc-4', code: a.code, scanned_at: at, source: 'camera' as const },
    ];
    const out = await service.settleOffline(scans, { device: 'dev-1', scanner: 'door', gate: 'A' });
    expect(out.map((o) => [o.id, o.result])).toEqual([
      ['sc-1', 'ok'],
      ['sc-2', 'invalid'],
      ['sc-3', 'ok'],
      ['sc-4', 'conflict'],
    ]);
    expect(await service.settleOffline([], { device: 'dev-1' })).toEqual([]);
    const mine = await service.conflicts({ limit: 10, show_id: show.id });
    const all = await service.conflicts({ limit: 10 });
    expect(mine.length).toBe(1);
    expect(all).toEqual(mine);
    expect((await refusal(service.conflicts({ limit: 10, show_id: 's_nope000000' }))).code).toBe('show_not_found');
  });
});
