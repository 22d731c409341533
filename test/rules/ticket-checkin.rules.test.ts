import { afterAll, describe, expect, it } from 'vitest';
import { createBus, type BusMessage } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { CheckIns } from '../../src/ticket/checkin.js';
import { NT, S } from '../../src/ticket/keys.js';
import type { ReservationRecord } from '../../src/ticket/records.js';
import { TicketService } from '../../src/ticket/service.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { tempDir } from '../support/process.js';
import { recordingStore } from '../support/recording-store.js';
import { refusal as refused } from '../support/refusal.js';

// The check-in transition and offline settlement (src/ticket/checkin.ts; docs/ticket.md, "Check-in
// answers", "Nonce", "Audit", "Live feedback", "Offline mode"): each outcome (ok, replayed,
// already_redeemed, canceled, invalid; offline: ok, conflict, invalid, settled before) and exactly
// what it writes in its one atomic update (the reservation, the audit entry in the three audit
// lists, the check-in list, the counter, the conflict lists, the settled scan's record and its
// TTL), the events on the bus, the scan time (never later than its receipt), the device of a
// settled scan's key, and the lists read newest first.
const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const iso = (ms: number) => new Date(ms).toISOString();
const DAY = 24 * 3600_000;
const stores: Store[] = [];
const buses: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const b of buses) await b.close();
  for (const s of stores) await s.close();
});

async function setup() {
  const store = await openLmdbStore({ path: tempDir('ticket-checkin-rules') });
  stores.push(store);
  const { store: recording, writes } = recordingStore(store);
  const clock = new ManualClock(T0);
  const bus = createBus(store, `checkin-${Math.random()}`);
  buses.push(bus);
  const messages: BusMessage[] = [];
  bus.onMessage((m) => messages.push(m));
  const service = new TicketService({ store: recording, clock, bus });
  const checkins = new CheckIns(recording, clock, bus);
  const show = await service.createShow({ name: '겨울 콘서트', venue: '세종문화회관', date: '2026-12-24T19:30:00+09:00' });
  const book = (seat: string) => service.reserve({ show_id: show.id, seat, amount_paid: 10_000 });
  const fresh = () => {
    writes.length = 0;
    messages.length = 0;
  };
  return { store, writes, clock, bus, messages, service, checkins, show, book, fresh };
}

const refusal = (p: Promise<unknown>) => refused(p, { details: true });

const briefOf = (r: ReservationRecord, status = r.status) => ({
  reservation_id: r.id,
  code: r.code,
  show_id: r.show_id,
  show_name: r.show_name,
  venue: r.venue,
  date: r.date,
  seat: r.seat,
  holder: r.holder ?? null,
  status,
});

/** An offline scan's ticket: as online, but never with the holder's name (docs/ticket.md). */
const offlineBriefOf = (r: ReservationRecord, status = r.status) => {
  const { holder: _holder, ...brief } = briefOf(r, status);
  return brief;
};

/** The show's default check-in list, which every old scanner's entry goes to. */
const MAIN_LIST = { id: 'main', name: '정문 · Main' };
/** A check-in as the answer shows it: the scan's own id, the list and the kind of scan added. */
/** What an attempt on the main list adds to its audit entry. */
const ON_MAIN = { list_id: 'main', type: 'entry' };
const answered = (c: Record<string, unknown>) => ({ ...c, id: expect.stringMatching(/^sc_/), list_id: 'main', type: 'entry' });

/** The three audit pushes of one attempt on a ticket: every attempt (its show's partition's), the reservation's, the show's. */
const auditPushes = (r: ReservationRecord, entry: unknown) => [
  { op: 'push', key: S.audit(r.show_id), value: entry, cap: 100_000 },
  { op: 'push', key: S.reservationAudit(r.show_id, r.id), value: entry, cap: 1_000 },
  { op: 'push', key: S.showAudit(r.show_id), value: entry, cap: 10_000 },
];

const scan = (id: string, code: string, at: number, source: 'camera' | 'manual' = 'camera') => ({ id, code, scanned_at: iso(at), source });

describe('online check-in', () => {
  it('by code: entry_allowed -> checked_in with the audit, the check-in list, the counter and two events, in one update', async () => {
    const { checkins, book, writes, messages, clock, fresh, show } = await setup();
    const r = await book('A-1');
    fresh();
    clock.advance(7_000);
    const ok = await checkins.checkInByCode(r.code, { scanner: 'door-1', gate: 'E1', nonce: 'n-1', source: 'camera', client: '10.0.0.9' });
    const at = iso(T0 + 7_000);
    expect(ok).toEqual({
      status: 'ok',
      replayed: false,
      ticket: briefOf(r, 'checked_in'),
      checkin: answered({ at, scanner: 'door-1', gate: 'E1', nonce: 'n-1' }),
      list: MAIN_LIST,
    });
    const scanId = (ok.checkin as { id: string }).id;
    const mark = { at, scanner: 'door-1', gate: 'E1', nonce: 'n-1', source: 'camera' };
    const entry = { ...mark, result: 'ok', code: r.code, reservation_id: r.id, client: '10.0.0.9', via: 'code', replayed: false, list_id: 'main', scan_id: scanId, type: 'entry' };
    const event = { type: 'checkin', reservation_id: r.id, code: r.code, show_id: r.show_id, show_name: r.show_name, venue: r.venue, date: r.date, seat: r.seat, at, scanner: 'door-1', gate: 'E1', source: 'camera', list_id: 'main', scan_id: scanId };
    // the entry is also the ticket's first scan on the show's main list, and one more person is inside
    const door = { main: [{ ...mark, id: scanId, list_id: 'main', type: 'entry' }] };
    expect(writes).toEqual([
      { op: 'set', key: S.reservation(r.show_id, r.id), value: { ...r, status: 'checked_in', checkin: mark, door } },
      ...auditPushes(r, entry),
      { op: 'push', key: S.checkins(show.id), value: event, cap: 10_000 },
      { op: 'incr', key: S.count(show.id, 'checked_in'), by: 1 },
      { op: 'incr', key: `ticket:show:${show.id}:inside`, by: 1 },
      { op: 'incr', key: `ticket:show:${show.id}:list:main:inside`, by: 1 },
    ]);
    // the door's live channel of the show: the scan, for every scanner of every list
    const doorEvent = {
      type: 'entry',
      show_id: show.id,
      list_id: 'main',
      reservation_id: r.id,
      code: r.code,
      seat: r.seat,
      status: 'checked_in',
      scan: { id: scanId, list_id: 'main', type: 'entry', at, scanner: 'door-1', gate: 'E1', reverted: null },
    };
    expect(messages).toEqual([
      { topic: 'checkins', message: event },
      { topic: `mticket:${r.code}`, message: event },
      { topic: `door:${show.id}`, message: doorEvent },
    ]);
  });

  it('fills what was not given: scanner `unnamed`, no gate, no nonce, source manual by code and api by id, no client', async () => {
    const { checkins, book, writes, fresh, clock } = await setup();
    const a = await book('A-1');
    const b = await book('A-2');
    fresh();
    const byCode = await checkins.checkInByCode(a.code, {});
    expect(byCode.checkin).toEqual(answered({ at: iso(T0), scanner: 'unnamed', gate: null, nonce: null }));
    expect(writes[1]).toEqual({
      op: 'push',
      key: S.audit(a.show_id),
      value: { at: iso(T0), result: 'ok', code: a.code, reservation_id: a.id, scanner: 'unnamed', gate: null, source: 'manual', nonce: null, client: null, via: 'code', replayed: false, list_id: 'main', scan_id: (byCode.checkin as { id: string }).id, type: 'entry' },
      cap: 100_000,
    });
    fresh();
    clock.advance(1);
    const byId = await checkins.checkInById(b.id, {});
    expect(byId).toEqual({ status: 'ok', replayed: false, ticket: briefOf(b, 'checked_in'), checkin: answered({ at: iso(T0 + 1), scanner: 'unnamed', gate: null, nonce: null }), list: MAIN_LIST });
    expect(writes[0]).toMatchObject({ value: { checkin: { at: iso(T0 + 1), scanner: 'unnamed', gate: null, nonce: null, source: 'api' } } });
    expect(writes[1]).toMatchObject({ value: { source: 'api', via: 'id', code: b.code, reservation_id: b.id } });
  });

  it('a retry with the nonce of the success gets it again (replayed), audited, with no second event and nothing else written', async () => {
    const { checkins, book, writes, messages, clock, fresh } = await setup();
    const r = await book('A-1');
    await checkins.checkInByCode(r.code, { scanner: 'door-1', gate: 'E1', nonce: 'n-1', source: 'camera' });
    fresh();
    clock.advance(3_000);
    const again = await checkins.checkInById(r.id, { scanner: 'door-2', nonce: 'n-1', client: '10.0.0.2' });
    expect(again).toEqual({ status: 'ok', replayed: true, ticket: briefOf(r, 'checked_in'), checkin: answered({ at: iso(T0), scanner: 'door-1', gate: 'E1', nonce: 'n-1' }), list: MAIN_LIST });
    // the replay names the scan it replays
    const entry = { at: iso(T0 + 3_000), result: 'ok', code: r.code, reservation_id: r.id, scanner: 'door-2', gate: null, source: 'api', nonce: 'n-1', client: '10.0.0.2', via: 'id', replayed: true, list_id: 'main', scan_id: (again.checkin as { id: string }).id, type: 'entry' };
    expect(writes).toEqual(auditPushes(r, entry));
    expect(messages).toEqual([]);
  });

  it('already_redeemed for another nonce or none (also when neither attempt had one), with the first check-in', async () => {
    const { checkins, book, writes, messages, clock, fresh } = await setup();
    const r = await book('A-1');
    await checkins.checkInByCode(r.code, { scanner: 'door-1', gate: 'E1' });
    fresh();
    clock.advance(60_000);
    const details = { first_checkin: { at: iso(T0), scanner: 'door-1', gate: 'E1' }, list_id: 'main', ticket: briefOf(r, 'checked_in') };
    expect(await refusal(checkins.checkInByCode(r.code, { scanner: 'door-2' }))).toEqual({
      status: 409,
      code: 'already_redeemed',
      message: `ticket ${r.code} was already checked in at ${iso(T0)}`,
      details,
    });
    expect(writes).toEqual(auditPushes(r, { at: iso(T0 + 60_000), result: 'already_redeemed', code: r.code, reservation_id: r.id, scanner: 'door-2', gate: null, source: 'manual', nonce: null, client: null, via: 'code', replayed: false, ...ON_MAIN }));
    expect((await refusal(checkins.checkInById(r.id, { nonce: 'other' }))).details).toEqual(details);
    const s = await book('A-2');
    await checkins.checkInByCode(s.code, { nonce: 'n-s' });
    expect((await refusal(checkins.checkInByCode(s.code, { nonce: 'n-other' }))).code).toBe('already_redeemed');
    expect((await refusal(checkins.checkInByCode(s.code, {}))).code).toBe('already_redeemed');
    expect(messages.filter((m) => m.topic === 'checkins')).toHaveLength(1);
  });

  it('canceled for a cancelled ticket, with when; audited, nothing else written', async () => {
    const { checkins, service, book, writes, messages, clock, fresh } = await setup();
    const r = await book('A-1');
    clock.advance(1_000);
    await service.cancel(r.id, 'refund');
    fresh();
    clock.advance(1_000);
    expect(await refusal(checkins.checkInByCode(r.code, { nonce: 'n-1' }))).toEqual({
      status: 409,
      code: 'canceled',
      message: `ticket ${r.code} is cancelled`,
      details: { cancelled_at: iso(T0 + 1_000), ticket: briefOf(r, 'cancelled') },
    });
    expect(writes).toEqual(auditPushes(r, { at: iso(T0 + 2_000), result: 'canceled', code: r.code, reservation_id: r.id, scanner: 'unnamed', gate: null, source: 'manual', nonce: 'n-1', client: null, via: 'code', replayed: false, ...ON_MAIN }));
    expect((await refusal(checkins.checkInById(r.id, {}))).code).toBe('canceled');
    expect(messages).toEqual([]);
  });

  it('invalid (404) for an unknown code or reservation id, audited in the full audit only', async () => {
    const { checkins, writes, messages, fresh } = await setup();
    fresh();
    expect(await refusal(checkins.checkInByCode('TK-22222222', { scanner: 'door-1', client: '10.0.0.1' }))).toEqual({
      status: 404,
      code: 'invalid',
      message: 'no ticket with code TK-22222222',
      details: { code: 'TK-22222222' },
    });
    expect(await refusal(checkins.checkInById('r_nope000000', { gate: 'W' }))).toEqual({
      status: 404,
      code: 'invalid',
      message: 'no ticket with reservation r_nope000000',
      details: { reservation_id: 'r_nope000000' },
    });
    expect(writes).toEqual([]);
    expect(messages).toEqual([]);
    expect(await checkins.auditLog({ limit: 10 })).toEqual([
      { at: iso(T0), result: 'invalid', code: null, reservation_id: 'r_nope000000', scanner: 'unnamed', gate: 'W', source: 'api', nonce: null, client: null, via: 'id', replayed: false, type: 'entry' },
      { at: iso(T0), result: 'invalid', code: 'TK-22222222', reservation_id: null, scanner: 'door-1', gate: null, source: 'manual', nonce: null, client: '10.0.0.1', via: 'code', replayed: false, type: 'entry' },
    ]);
  });

  it('a code whose reservation is gone is invalid by code: the entry names the code, no reservation', async () => {
    const { checkins, store } = await setup();
    await store.set('ticket:code:TK-33333333', 'r_gone000000');
    expect(await refusal(checkins.checkInByCode('TK-33333333', {}))).toEqual({ status: 404, code: 'invalid', message: 'no ticket with code TK-33333333', details: { code: 'TK-33333333' } });
    expect(await checkins.auditLog({ limit: 10 })).toEqual([
      { at: iso(T0), result: 'invalid', code: 'TK-33333333', reservation_id: null, scanner: 'unnamed', gate: null, source: 'manual', nonce: null, client: null, via: 'code', replayed: false, type: 'entry' },
    ]);
    expect(await checkins.settleOffline(scan('sc-g', 'TK-33333333', T0), { device: 'd' })).toEqual({ id: 'sc-g', result: 'invalid', replayed: false });
    expect((await checkins.auditLog({ limit: 1 }))[0]).toMatchObject({ result: 'invalid', code: 'TK-33333333', reservation_id: null, nonce: 'sc-g' });
  });
});

describe('refusals before a look-up, and the lists', () => {
  it('audits a malformed code (its first 32 characters) or a rate-limited try', async () => {
    const { checkins, clock } = await setup();
    await checkins.recordRefusal('malformed', { code: 'x'.repeat(40), via: 'code' });
    clock.advance(5);
    await checkins.recordRefusal('rate_limited', { code: null, reservation_id: 'r_abc', via: 'id', scanner: 's', gate: 'g', nonce: 'n', source: 'camera', client: 'c' });
    await checkins.recordRefusal('rate_limited', { via: 'code' });
    expect(await checkins.auditLog({ limit: 10 })).toEqual([
      { at: iso(T0 + 5), result: 'rate_limited', code: null, reservation_id: null, scanner: 'unnamed', gate: null, source: 'manual', nonce: null, client: null, via: 'code', replayed: false },
      { at: iso(T0 + 5), result: 'rate_limited', code: null, reservation_id: 'r_abc', scanner: 's', gate: 'g', source: 'camera', nonce: 'n', client: 'c', via: 'id', replayed: false },
      { at: iso(T0), result: 'malformed', code: 'x'.repeat(32), reservation_id: null, scanner: 'unnamed', gate: null, source: 'manual', nonce: null, client: null, via: 'code', replayed: false },
    ]);
    await checkins.recordRefusal('malformed', { reservation_id: null, via: 'id' });
    expect((await checkins.auditLog({ limit: 1 }))[0]).toMatchObject({ source: 'api', code: null, reservation_id: null });
  });

  it('reads check-ins and audit entries newest first, up to the limit; of one reservation or one show', async () => {
    const { checkins, service, book, clock } = await setup();
    const a = await book('A-1');
    const b = await book('A-2');
    const other = await service.createShow({ name: '다른 공연', venue: '소극장', date: '2026-12-25' });
    const c = await service.reserve({ show_id: other.id, seat: 'B-1', amount_paid: 0 });
    await checkins.checkInByCode(a.code, {});
    clock.advance(1);
    await checkins.checkInByCode(b.code, {});
    clock.advance(1);
    await checkins.checkInByCode(c.code, {});
    clock.advance(1);
    await refusal(checkins.checkInByCode(a.code, {}));
    expect((await checkins.recentCheckIns(10)).map((e) => e.code)).toEqual([c.code, b.code, a.code]);
    expect((await checkins.recentCheckIns(2)).map((e) => e.code)).toEqual([c.code, b.code]);
    expect((await checkins.auditLog({ limit: 10 })).map((e) => [e.code, e.result])).toEqual([[a.code, 'already_redeemed'], [c.code, 'ok'], [b.code, 'ok'], [a.code, 'ok']]);
    expect((await checkins.auditLog({ limit: 2 })).map((e) => e.code)).toEqual([a.code, c.code]);
    expect((await checkins.auditLog({ limit: 10, reservation_id: a.id })).map((e) => e.result)).toEqual(['already_redeemed', 'ok']);
    expect((await checkins.auditLog({ limit: 10, show_id: other.id })).map((e) => e.code)).toEqual([c.code]);
    expect((await checkins.auditLog({ limit: 10, show_id: a.show_id })).map((e) => e.code)).toEqual([a.code, b.code, a.code]);
  });
});

describe('offline scans', () => {
  it('checks in at the time of the scan, marked offline, with the scan as nonce, its record kept 30 days, and two events', async () => {
    const { checkins, book, writes, messages, clock, fresh, show } = await setup();
    const r = await book('A-1');
    fresh();
    clock.advance(600_000);
    const scannedAt = T0 + 60_000;
    const res = await checkins.settleOffline(scan('sc-1', r.code, scannedAt), { device: 'dev-east', scanner: 'door-east', gate: 'E', client: '10.0.0.5' });
    const at = iso(scannedAt);
    expect(res).toEqual({ id: 'sc-1', result: 'ok', replayed: false, ticket: offlineBriefOf(r, 'checked_in'), checkin: { at, scanner: 'door-east', gate: 'E' } });
    const mark = { at, scanner: 'door-east', gate: 'E', nonce: 'sc-1', source: 'camera' };
    // the scan's id on the ticket's main list (the offline answer does not carry it)
    const scanId = (writes[0] as unknown as { value: { door: { main: { id: string }[] } } }).value.door.main[0]!.id;
    expect(scanId).toMatch(/^sc_/);
    const entry = { ...mark, result: 'ok', code: r.code, reservation_id: r.id, client: '10.0.0.5', via: 'code', replayed: false, offline: { id: 'sc-1', scanned_at: at, received_at: iso(T0 + 600_000) }, list_id: 'main', scan_id: scanId, type: 'entry' };
    const event = { type: 'checkin', reservation_id: r.id, code: r.code, show_id: r.show_id, show_name: r.show_name, venue: r.venue, date: r.date, seat: r.seat, at, scanner: 'door-east', gate: 'E', source: 'camera', list_id: 'main', scan_id: scanId };
    const door = { main: [{ ...mark, offline: true, id: scanId, list_id: 'main', type: 'entry' }] };
    expect(writes).toEqual([
      { op: 'set', key: S.reservation(r.show_id, r.id), value: { ...r, status: 'checked_in', checkin: { ...mark, offline: true }, door } },
      ...auditPushes(r, entry),
      { op: 'push', key: S.checkins(show.id), value: event, cap: 10_000 },
      { op: 'incr', key: S.count(show.id, 'checked_in'), by: 1 },
      { op: 'incr', key: `ticket:show:${show.id}:inside`, by: 1 },
      { op: 'incr', key: `ticket:show:${show.id}:list:main:inside`, by: 1 },
      { op: 'set', key: S.offlineScan(r.show_id, 'dev-east', 'sc-1'), value: res, ttlMs: 30 * DAY },
    ]);
    expect(messages.slice(0, 2)).toEqual([
      { topic: 'checkins', message: event },
      { topic: `mticket:${r.code}`, message: event },
    ]);
    expect(messages[2]).toMatchObject({ topic: `door:${show.id}`, message: { type: 'entry', list_id: 'main', reservation_id: r.id, scan: { id: scanId, at } } });
    expect(messages).toHaveLength(3);
  });

  it('takes a scan dated after its receipt at its receipt; one dated at or before it at its own time', async () => {
    const { checkins, book, clock, writes, fresh } = await setup();
    const [a, b, c] = [await book('A-1'), await book('A-2'), await book('A-3')];
    clock.advance(10_000);
    const now = T0 + 10_000;
    const late = await checkins.settleOffline(scan('late', a.code, now + 1, 'manual'), { device: 'd' });
    expect(late.checkin!.at).toBe(iso(now));
    const exact = await checkins.settleOffline(scan('exact', b.code, now), { device: 'd' });
    expect(exact.checkin!.at).toBe(iso(now));
    fresh();
    const before = await checkins.settleOffline(scan('before', c.code, now - 1), { device: 'd' });
    expect(before.checkin).toEqual({ at: iso(now - 1), scanner: 'unnamed', gate: null });
    expect(writes[1]).toMatchObject({ value: { at: iso(now - 1), offline: { id: 'before', scanned_at: iso(now - 1), received_at: iso(now) } } });
    expect((await checkins.auditLog({ limit: 10, reservation_id: a.id }))[0]).toMatchObject({
      at: iso(now),
      source: 'manual',
      offline: { id: 'late', scanned_at: iso(now + 1), received_at: iso(now) },
    });
  });

  it('a scan settled before gets its first result again (replayed) and writes nothing', async () => {
    const { checkins, book, writes, messages, clock, fresh } = await setup();
    const r = await book('A-1');
    const first = await checkins.settleOffline(scan('sc-1', r.code, T0 - 1_000), { device: 'dev-1' });
    fresh();
    clock.advance(5_000);
    const again = await checkins.settleOffline(scan('sc-1', r.code, T0 - 1_000), { device: 'dev-1', scanner: 'another' });
    expect(again).toEqual({ ...first, replayed: true });
    expect(writes).toEqual([]);
    expect(messages).toEqual([]);
    expect(await checkins.auditLog({ limit: 10 })).toHaveLength(1);
  });

  it('keeps the settled scan per device: the same scan id from another device is not settled before', async () => {
    const { checkins, book, writes, fresh } = await setup();
    const r = await book('A-1');
    await checkins.settleOffline(scan('sc-1', r.code, T0), { device: 'dev-1' });
    fresh();
    // the same id is the same nonce: the success again, written for this device
    const other = await checkins.settleOffline(scan('sc-1', r.code, T0), { device: 'dev-2' });
    expect(other).toEqual({ id: 'sc-1', result: 'ok', replayed: true, ticket: offlineBriefOf(r, 'checked_in'), checkin: { at: iso(T0), scanner: 'unnamed', gate: null } });
    expect(writes.map((w) => w.key)).toEqual([S.audit(r.show_id), S.reservationAudit(r.show_id, r.id), S.showAudit(r.show_id), S.offlineScan(r.show_id, 'dev-2', 'sc-1')]);
  });

  it('names the device `unknown` in the settled scan key when none is given', async () => {
    const { checkins, book, writes, fresh, store } = await setup();
    const r = await book('A-1');
    fresh();
    await checkins.settleOffline(scan('sc-9', r.code, T0), { device: undefined as unknown as string });
    expect(writes.at(-1)).toMatchObject({ op: 'set', key: S.offlineScan(r.show_id, 'unknown', 'sc-9'), ttlMs: 30 * DAY });
    expect(await store.get(S.offlineScan(r.show_id, 'unknown', 'sc-9'))).toMatchObject({ id: 'sc-9', result: 'ok' });
  });

  it('a scan whose check-in the hub made before its answer was lost (same nonce) is that check-in: ok, replayed, its first mark; written once', async () => {
    const { checkins, book, writes, messages, clock, fresh } = await setup();
    const r = await book('A-1');
    const online = await checkins.checkInByCode(r.code, { nonce: 'sc-1', scanner: 'door-1', gate: 'G', source: 'camera' });
    fresh();
    clock.advance(2_000);
    const res = await checkins.settleOffline(scan('sc-1', r.code, T0 + 1_000), { device: 'dev-1', scanner: 'door-1' });
    const checkin = { at: iso(T0), scanner: 'door-1', gate: 'G' };
    expect(res).toEqual({ id: 'sc-1', result: 'ok', replayed: true, ticket: offlineBriefOf(r, 'checked_in'), checkin });
    const entry = {
      at: iso(T0 + 1_000), result: 'ok', code: r.code, reservation_id: r.id, scanner: 'door-1', gate: null, source: 'camera', nonce: 'sc-1', client: null, via: 'code', replayed: true,
      offline: { id: 'sc-1', scanned_at: iso(T0 + 1_000), received_at: iso(T0 + 2_000) },
      // the replayed scan is the online check-in's
      list_id: 'main', scan_id: (online.checkin as { id: string }).id, type: 'entry',
    };
    expect(writes).toEqual([
      ...auditPushes(r, entry),
      { op: 'set', key: S.offlineScan(r.show_id, 'dev-1', 'sc-1'), value: { id: 'sc-1', result: 'ok', replayed: false, ticket: offlineBriefOf(r, 'checked_in'), checkin }, ttlMs: 30 * DAY },
    ]);
    expect(messages).toEqual([]);
    fresh();
    expect(await checkins.settleOffline(scan('sc-1', r.code, T0 + 1_000), { device: 'dev-1' })).toEqual(res);
    expect(writes).toEqual([]);
  });

  it('a ticket already in becomes a conflict naming the first check-in, in the audit, both conflict lists and the scan record', async () => {
    const { checkins, book, writes, messages, clock, fresh, show } = await setup();
    const r = await book('A-1');
    await checkins.checkInByCode(r.code, { scanner: 'door-1', gate: 'G' });
    fresh();
    clock.advance(9_000);
    const res = await checkins.settleOffline(scan('sc-2', r.code, T0 + 4_000, 'manual'), { device: 'dev-2', scanner: 'door-2', gate: 'H', client: '10.0.0.7' });
    const first = { at: iso(T0), scanner: 'door-1', gate: 'G', offline: false };
    const conflict = {
      at: iso(T0 + 4_000), received_at: iso(T0 + 9_000), reason: 'already_redeemed', code: r.code, reservation_id: r.id, show_id: show.id, seat: 'A-1',
      scanner: 'door-2', gate: 'H', offline_id: 'sc-2', client: '10.0.0.7', first_checkin: first, cancelled_at: null, list_id: 'main',
    };
    expect(res).toEqual({ id: 'sc-2', result: 'conflict', replayed: false, ticket: offlineBriefOf(r, 'checked_in'), conflict });
    const entry = {
      at: iso(T0 + 4_000), result: 'conflict', code: r.code, reservation_id: r.id, scanner: 'door-2', gate: 'H', source: 'manual', nonce: 'sc-2', client: '10.0.0.7', via: 'code', replayed: false,
      offline: { id: 'sc-2', scanned_at: iso(T0 + 4_000), received_at: iso(T0 + 9_000) },
      conflict: { reason: 'already_redeemed', first_checkin: first },
      ...ON_MAIN,
    };
    expect(writes).toEqual([
      ...auditPushes(r, entry),
      { op: 'push', key: S.conflicts(show.id), value: conflict, cap: 10_000 },
      { op: 'push', key: S.showConflicts(show.id), value: conflict, cap: 10_000 },
      { op: 'set', key: S.offlineScan(r.show_id, 'dev-2', 'sc-2'), value: res, ttlMs: 30 * DAY },
    ]);
    expect(messages).toEqual([]);
    fresh();
    expect(await checkins.settleOffline(scan('sc-2', r.code, T0 + 4_000), { device: 'dev-2' })).toEqual({ ...res, replayed: true });
    expect(writes).toEqual([]);
  });

  it('the first check-in of a conflict says when it was made offline', async () => {
    const { checkins, book } = await setup();
    const r = await book('A-1');
    await checkins.settleOffline(scan('sc-1', r.code, T0 - 5_000), { device: 'dev-1', gate: 'W' });
    const res = await checkins.settleOffline(scan('sc-2', r.code, T0 - 1_000), { device: 'dev-2' });
    expect(res.conflict).toMatchObject({ reason: 'already_redeemed', first_checkin: { at: iso(T0 - 5_000), scanner: 'unnamed', gate: 'W', offline: true }, gate: null, client: null, scanner: 'unnamed' });
  });

  it('a cancelled ticket becomes a conflict `canceled`, with when and no first check-in', async () => {
    const { checkins, service, book, clock, writes, fresh, show } = await setup();
    const r = await book('A-1');
    clock.advance(1_000);
    await service.cancel(r.id);
    fresh();
    const res = await checkins.settleOffline(scan('sc-3', r.code, T0 + 500), { device: 'dev-1' });
    expect(res).toEqual({
      id: 'sc-3',
      result: 'conflict',
      replayed: false,
      ticket: offlineBriefOf(r, 'cancelled'),
      conflict: {
        at: iso(T0 + 500), received_at: iso(T0 + 1_000), reason: 'canceled', code: r.code, reservation_id: r.id, show_id: show.id, seat: 'A-1',
        scanner: 'unnamed', gate: null, offline_id: 'sc-3', client: null, first_checkin: null, cancelled_at: iso(T0 + 1_000), list_id: 'main',
      },
    });
    expect(writes[0]).toMatchObject({ key: S.audit(r.show_id), value: { result: 'conflict', conflict: { reason: 'canceled', first_checkin: null } } });
  });

  it('an unknown code is invalid, audited once with its scan, however often it is sent', async () => {
    const { checkins, writes, messages, clock, fresh } = await setup();
    fresh();
    clock.advance(3_000);
    const res = await checkins.settleOffline(scan('sc-x', 'TK-22222222', T0 + 1_000), { device: 'dev-1', scanner: 'door-1', client: '10.0.0.3' });
    expect(res).toEqual({ id: 'sc-x', result: 'invalid', replayed: false });
    const entry = {
      at: iso(T0 + 1_000), result: 'invalid', code: 'TK-22222222', reservation_id: null, scanner: 'door-1', gate: null, source: 'camera', nonce: 'sc-x', client: '10.0.0.3', via: 'code', replayed: false,
      offline: { id: 'sc-x', scanned_at: iso(T0 + 1_000), received_at: iso(T0 + 3_000) },
      type: 'entry',
    };
    expect(writes).toEqual([
      { op: 'push', key: NT.audit, value: entry, cap: 100_000 },
      { op: 'set', key: NT.offlineScan('dev-1', 'sc-x'), value: res, ttlMs: 30 * DAY },
    ]);
    expect(await checkins.auditLog({ limit: 10 })).toEqual([entry]);
    fresh();
    expect(await checkins.settleOffline(scan('sc-x', 'TK-22222222', T0 + 1_000), { device: 'dev-1' })).toEqual({ ...res, replayed: true });
    expect(writes).toEqual([]);
    expect(await checkins.auditLog({ limit: 10 })).toHaveLength(1);
    expect(messages).toEqual([]);
  });

  it('settles a batch in order through the service: the second scan of a ticket is a conflict', async () => {
    const { service, book } = await setup();
    const r = await book('A-1');
    const res = await service.settleOffline([scan('s1', r.code, T0 - 2_000), scan('s2', r.code, T0 - 1_000), scan('s3', 'TK-22222222', T0)], { device: 'd' });
    expect(res.map((x) => [x.id, x.result, x.replayed])).toEqual([['s1', 'ok', false], ['s2', 'conflict', false], ['s3', 'invalid', false]]);
  });

  it('lists conflicts newest first, up to the limit; of one show', async () => {
    const { checkins, service, book, clock } = await setup();
    const a = await book('A-1');
    const other = await service.createShow({ name: '다른 공연', venue: '소극장', date: '2026-12-25' });
    const b = await service.reserve({ show_id: other.id, seat: 'B-1', amount_paid: 0 });
    await checkins.checkInByCode(a.code, {});
    await checkins.checkInByCode(b.code, {});
    for (const [id, code] of [['c1', a.code], ['c2', b.code], ['c3', a.code]] as const) {
      clock.advance(1_000);
      await checkins.settleOffline(scan(id, code, clock.now()), { device: 'd' });
    }
    expect((await checkins.conflicts({ limit: 10 })).map((c) => c.offline_id)).toEqual(['c3', 'c2', 'c1']);
    expect((await checkins.conflicts({ limit: 2 })).map((c) => c.offline_id)).toEqual(['c3', 'c2']);
    expect((await checkins.conflicts({ limit: 10, show_id: a.show_id })).map((c) => c.offline_id)).toEqual(['c3', 'c1']);
    expect((await checkins.conflicts({ limit: 1, show_id: other.id })).map((c) => c.offline_id)).toEqual(['c2']);
    expect(await checkins.conflicts({ limit: 10, show_id: 's_none000000' })).toEqual([]);
  });
});
