import { afterAll, describe, expect, it } from 'vitest';
import { createBus, type BusMessage } from '../../src/bus.js';
import { ManualClock } from '../../src/clock.js';
import { AppError } from '../../src/errors.js';
import { openLmdbStore } from '../../src/store/lmdb.js';
import type { Store } from '../../src/store/port.js';
import { openRedisStore } from '../../src/store/redis.js';
import { K, S } from '../../src/ticket/keys.js';
import { CHECKIN_TOPIC, TicketService } from '../../src/ticket/service.js';
import { tempDir } from '../support/process.js';
import { legacyReservation } from '../support/ticket.js';
import { deletePrefix, redisOrSkip, uniquePrefix } from '../support/redis.js';

const redis = await redisOrSkip();
const prefixes: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const p of prefixes) await deletePrefix(redis.url, p);
});

const T0 = Date.parse('2026-12-24T18:00:00+09:00');

async function harness(open: () => Promise<Store>) {
  const store = await open();
  stores.push(store);
  const clock = new ManualClock(T0);
  const bus = createBus(store, `test-${Math.random()}`);
  const messages: BusMessage[] = [];
  bus.onMessage((m) => messages.push(m));
  const service = new TicketService({ store, clock, bus });
  const show = await service.createShow({ name: '겨울 콘서트', venue: '세종문화회관', date: '2026-12-24T19:30:00+09:00' });
  return { store, clock, bus, messages, service, show };
}

const error = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, code: err.code, details: err.details as any };
    throw err;
  }
  throw new Error('expected an AppError');
};

const adapters: [string, boolean, () => Promise<Store>][] = [
  ['LMDB', true, () => openLmdbStore({ path: tempDir('ticket-lmdb') })],
  [
    'Redis',
    redis.available,
    () => {
      const prefix = uniquePrefix('ticket');
      prefixes.push(prefix);
      return openRedisStore({ url: redis.url, prefix });
    },
  ],
];

describe.each(adapters)('ticket service on %s', (_name, available, open) => {
  it.runIf(available)('books a seat with a code, 2 cards and a QR image; a seat is booked once', async () => {
    const { service, show } = await harness(open);
    const t = await service.book({ show_id: show.id, seat: 'A-1', amount_paid: 99000, theme: 'animals' });
    expect(t).toMatchObject({ show_name: '겨울 콘서트', venue: '세종문화회관', seat: 'A-1', amount_paid: 99000, status: 'entry_allowed' });
    expect(t.code).toMatch(/^TK-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8}$/);
    expect(t.qr_code).toBe(t.code);
    expect(t.qr_image).toMatch(/^data:image\/png;base64,/);
    expect(t.bingo_cards).toHaveLength(2);
    expect(t.bingo_cards.every((c) => c.theme === 'animals')).toBe(true);
    expect(await error(service.book({ show_id: show.id, seat: 'A-1', amount_paid: 1 }))).toMatchObject({ status: 409, code: 'seat_taken' });
    expect(await error(service.book({ show_id: 's_nonexisten', seat: 'A-1', amount_paid: 1 }))).toMatchObject({ status: 404, code: 'show_not_found' });
    // the stored ticket reads back the same
    expect(await service.ticket(t.code)).toEqual(t);
  });

  it.runIf(available)('gives a reservation without cards exactly one set under 30 concurrent first lookups', async () => {
    const { store, service } = await harness(open);
    // two services on the same store: like two processes racing
    const other = new TicketService({ store, clock: new ManualClock(T0), bus: createBus(store, 'other') });
    await legacyReservation(store, 'r_legacy0001', 'TK-MGRATE22');
    const views = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? other : service).ticket('TK-MGRATE22')),
    );
    const first = JSON.stringify(views[0]!.bingo_cards);
    expect(views[0]!.bingo_cards).toHaveLength(2);
    for (const v of views) expect(JSON.stringify(v.bingo_cards)).toBe(first);
    expect(service.cardMigrations + other.cardMigrations).toBe(1);
    const stored = (await store.get<any>(K.reservation('r_legacy0001')))!;
    expect(JSON.stringify(stored.bingo_cards)).toBe(first);
    // later lookups change nothing
    await service.ticket('TK-MGRATE22');
    expect(service.cardMigrations + other.cardMigrations).toBe(1);
  });

  it.runIf(available)('50 simultaneous check-ins of one ticket: exactly one ok, 49 already_redeemed, all audited', async () => {
    const { service, show, messages, store } = await harness(open);
    const t = await service.book({ show_id: show.id, seat: 'C-7', amount_paid: 50000 });
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, (_, i) => service.checkInByCode(t.code, { scanner: `s${i}`, gate: 'A', source: 'camera' })),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    expect(ok).toHaveLength(1);
    const winner = (ok[0] as PromiseFulfilledResult<any>).value;
    expect(winner).toMatchObject({ status: 'ok', replayed: false, ticket: { status: 'checked_in' } });
    for (const r of results.filter((x) => x.status === 'rejected') as PromiseRejectedResult[]) {
      expect(r.reason).toBeInstanceOf(AppError);
      expect(r.reason).toMatchObject({ status: 409, code: 'already_redeemed' });
      expect(r.reason.details.first_checkin).toEqual({ at: winner.checkin.at, scanner: winner.checkin.scanner, gate: 'A' });
    }
    const audit = await service.auditLog({ limit: 100, reservation_id: t.reservation_id });
    expect(audit).toHaveLength(50);
    expect(audit.filter((e) => e.result === 'ok')).toHaveLength(1);
    expect(audit.filter((e) => e.result === 'already_redeemed')).toHaveLength(49);
    expect(messages.filter((m) => m.topic === CHECKIN_TOPIC)).toHaveLength(1);
    expect(await service.recentCheckIns(10)).toHaveLength(1);
    expect((await store.get<any>(S.reservation(show.id, t.reservation_id)))!.status).toBe('checked_in');
  });

  it.runIf(available)('a retried scan with the same nonce gets its success again; another nonce does not', async () => {
    const { service, show, clock, messages } = await harness(open);
    const t = await service.book({ show_id: show.id, seat: 'D-1', amount_paid: 1000 });
    const first = await service.checkInByCode(t.code, { nonce: 'nonce-1', scanner: 'gate-phone', gate: 'B', source: 'camera' });
    clock.advance(5000);
    const retry = await service.checkInByCode(t.code, { nonce: 'nonce-1', scanner: 'gate-phone', gate: 'B', source: 'camera' });
    expect(retry).toEqual({ ...first, replayed: true });
    expect(await error(service.checkInByCode(t.code, { nonce: 'nonce-2', scanner: 'other' }))).toMatchObject({
      status: 409,
      code: 'already_redeemed',
      details: { first_checkin: { at: first.checkin.at, scanner: 'gate-phone', gate: 'B' } },
    });
    // the nonce of the success also replays through the id route
    expect(await service.checkInById(t.reservation_id, { nonce: 'nonce-1' })).toMatchObject({ status: 'ok', replayed: true });
    expect(messages.filter((m) => m.topic === CHECKIN_TOPIC)).toHaveLength(1);
    const audit = await service.auditLog({ limit: 10, reservation_id: t.reservation_id });
    expect(audit.map((e) => [e.result, e.replayed])).toEqual([
      ['ok', true],
      ['already_redeemed', false],
      ['ok', true],
      ['ok', false],
    ]);
  });

  it.runIf(available)('cancel: refused at the gate, idempotent, frees the seat; a used ticket cannot be cancelled', async () => {
    const { service, show } = await harness(open);
    const t = await service.book({ show_id: show.id, seat: 'E-5', amount_paid: 1000 });
    const c = await service.cancel(t.reservation_id, 'refund');
    expect(c).toMatchObject({ status: 'cancelled', cancel_reason: 'refund' });
    expect(await service.cancel(t.reservation_id)).toEqual(c);
    expect(await error(service.checkInByCode(t.code, {}))).toMatchObject({ status: 409, code: 'canceled' });
    expect(await error(service.checkInById(t.reservation_id, {}))).toMatchObject({ status: 409, code: 'canceled' });
    expect((await service.ticket(t.code)).status).toBe('cancelled');
    // the seat is free again
    const again = await service.book({ show_id: show.id, seat: 'E-5', amount_paid: 1000 });
    await service.checkInById(again.reservation_id, {});
    expect(await error(service.cancel(again.reservation_id))).toMatchObject({ status: 409, code: 'already_redeemed' });
    expect(await error(service.cancel('r_nonexisten'))).toMatchObject({ status: 404, code: 'invalid' });
  });

  it.runIf(available)('unknown codes and ids are 404 invalid and audited; cards go up to 4', async () => {
    const { service, show } = await harness(open);
    expect(await error(service.checkInByCode('TK-22222222', { scanner: 'x' }))).toMatchObject({ status: 404, code: 'invalid' });
    expect(await error(service.checkInById('r_0000000000', {}))).toMatchObject({ status: 404, code: 'invalid' });
    expect(await error(service.ticket('TK-22222222'))).toMatchObject({ status: 404, code: 'invalid' });
    const audit = await service.auditLog({ limit: 10 });
    expect(audit.map((e) => [e.result, e.via, e.code, e.reservation_id])).toEqual([
      ['invalid', 'id', null, 'r_0000000000'],
      ['invalid', 'code', 'TK-22222222', null],
    ]);
    const t = await service.book({ show_id: show.id, seat: 'F-1', amount_paid: 0 });
    expect((await service.addCard(t.code)).bingo_cards.map((c) => c.no)).toEqual([1, 2, 3]);
    expect((await service.addCard(t.code, 'stage')).bingo_cards[3]).toMatchObject({ no: 4, theme: 'stage', kind: 'text' });
    expect(await error(service.addCard(t.code))).toMatchObject({ status: 409, code: 'cards_full' });
  });
});

