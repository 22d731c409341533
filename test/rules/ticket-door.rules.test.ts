import { beforeAll, describe, expect, it } from 'vitest';
import { admits, contradiction, doorDelta, entryVerdict, mainList, validity, withDoor, withRevert, withScan, type CheckInList, type DoorScan } from '../../src/ticket/door.js';
import type { ReservationRecord } from '../../src/ticket/records.js';
import { AUTH_TEST_ENV, bearer, signIn } from '../support/auth.js';
import { call, type Answer } from '../support/http.js';
import { tempDir, type HubProcess } from '../support/process.js';
import { redisProcesses } from '../support/redis-processes.js';

// The door's list rules (pretix's allow_multiple_entries, allow_entry_after_exit, validity, who a
// list admits), first as the pure rules, then where they must hold: on two hub processes sharing
// Redis, with simultaneous scans split over both, and for offline uploads settled by either.

const T0 = Date.parse('2026-12-24T18:00:00+09:00');
const ticket = (over: Partial<ReservationRecord> = {}): ReservationRecord => ({
  id: 'r_0000000001', code: 'TK-AAAAAAAA', show_id: 's_0000000001', show_name: '공연', venue: '홀', date: '2026-12-24', seat: 'A-5', amount_paid: 0,
  holder: null, status: 'entry_allowed', created_at: new Date(T0).toISOString(), checkin: null, cancelled_at: null, cancel_reason: null, ...over,
});
const rules = (over: Partial<CheckInList> = {}): CheckInList => ({ ...mainList('s_0000000001', true), id: 'cl_0000000001', ...over });
let n = 0;
const scanOf = (type: 'entry' | 'exit', listId = 'cl_0000000001', at = T0): DoorScan => ({
  id: `sc_${++n}`, type, list_id: listId, at: new Date(at).toISOString(), scanner: 's', gate: null, nonce: null, source: 'camera',
});
/** The ticket after these scans. */
const after = (...scans: DoorScan[]) => withDoor(ticket(), scans.reduce((d, s) => withScan(d, s), {} as Record<string, DoorScan[]>));

describe('the rules, pure', () => {
  it('entry: once; again only while the list allows multiple entries, or after an exit when it allows that', () => {
    const once = rules({ allow_entry_after_exit: false });
    const reenter = rules({ allow_entry_after_exit: true });
    const many = rules({ allow_multiple_entries: true, allow_entry_after_exit: false });
    expect(entryVerdict(once, ticket(), T0)).toBe('ok');
    expect(entryVerdict(once, after(scanOf('entry')), T0)).toBe('already_redeemed');
    expect(entryVerdict(once, after(scanOf('entry'), scanOf('exit')), T0)).toBe('already_redeemed');
    expect(entryVerdict(reenter, after(scanOf('entry')), T0)).toBe('already_redeemed');
    expect(entryVerdict(reenter, after(scanOf('entry'), scanOf('exit')), T0)).toBe('ok');
    expect(entryVerdict(many, after(scanOf('entry')), T0)).toBe('ok');
    expect(entryVerdict(many, after(scanOf('entry'), scanOf('exit')), T0)).toBe('ok');
    // scans on another list do not count on this one
    expect(entryVerdict(once, after(scanOf('entry', 'main')), T0)).toBe('ok');
  });

  it('an undone entry does not count; the ticket and counters follow what stands', () => {
    const e = scanOf('entry');
    const r = after(e);
    expect(r.status).toBe('checked_in');
    const undone = withRevert(r.door!, e.list_id, e.id, { id: 'rv_1', at: '', by: 'staff', reason: 'x' });
    expect(entryVerdict(rules(), withDoor(r, undone), T0)).toBe('ok');
    expect(withDoor(r, undone)).toMatchObject({ status: 'entry_allowed', checkin: null });
    expect(doorDelta(r.door!, undone)).toEqual({ lists: { cl_0000000001: -1 }, show: -1, checked_in: -1 });
    // inside on two lists: leaving one keeps the person inside the show
    const two = after(scanOf('entry'), scanOf('entry', 'main'));
    const left = withScan(two.door!, scanOf('exit'));
    expect(doorDelta(two.door!, left)).toEqual({ lists: { cl_0000000001: -1 }, show: 0, checked_in: 0 });
  });

  it('validity and who a list admits; a contradicting rule is named', () => {
    const l = rules({ valid_from: new Date(T0).toISOString(), valid_until: new Date(T0 + 3600_000).toISOString(), seats: [{ from: 'A-2', to: 'A-10' }], kinds: ['vip'] });
    expect(validity(l, T0 - 1)).toBe('before');
    expect(validity(l, T0)).toBe('ok');
    expect(validity(l, T0 + 3600_000)).toBe('ok');
    expect(validity(l, T0 + 3600_001)).toBe('after');
    expect(admits(l, { seat: 'A-9', kind: 'vip' })).toBe(true);
    expect(admits(l, { seat: 'a-10', kind: 'vip' })).toBe(true);
    expect(admits(l, { seat: 'A-11', kind: 'vip' })).toBe(false);
    expect(admits(l, { seat: 'A-1', kind: 'vip' })).toBe(false);
    expect(admits(l, { seat: 'A-5' })).toBe(false);
    expect(entryVerdict(l, ticket({ seat: 'A-5', kind: 'vip' }), T0 - 1)).toBe('invalid_time');
    expect(entryVerdict(l, ticket({ seat: 'B-5', kind: 'vip' }), T0)).toBe('product');
    expect(contradiction({ valid_from: '2026-12-25T00:00:00Z', valid_until: '2026-12-24T00:00:00Z', seats: null })?.field).toBe('valid_until');
    expect(contradiction({ valid_from: null, valid_until: null, seats: [{ from: 'A-10', to: 'A-9' }] })?.field).toBe('seats.0');
    expect(contradiction({ valid_from: '2026-12-24T00:00:00Z', valid_until: '2026-12-24T00:00:00Z', seats: [{ from: 'A-1', to: 'A-1' }] })).toBeNull();
  });
});

const { redis, prefix, start } = await redisProcesses();
describe('the rules on two hub processes sharing Redis', () => {
  let a: HubProcess;
  let b: HubProcess;
  let staff: Record<string, string>;
  const on = (i: number) => (i % 2 ? a : b).url;

  beforeAll(async () => {
    if (!redis.available) return;
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: prefix('ticket-door'), ...AUTH_TEST_ENV };
    [a, b] = await Promise.all([start({ ...env, DATA_DIR: tempDir('door-a') }), start({ ...env, DATA_DIR: tempDir('door-b') })]);
    staff = bearer(await signIn(a.url, ['staff']));
  });

  const showWith = async (seats: string[]) => {
    const show = (await call(a.url, 'POST', '/api/shows', { name: '두 프로세스 문', venue: '홀', date: '2026-12-31' }, staff)).body;
    const tickets = [];
    for (const seat of seats) tickets.push((await call(b.url, 'POST', '/api/reservations', { show_id: show.id, seat, amount_paid: 1000, holder: `홀더 ${seat}` }, staff)).body);
    return { show, tickets };
  };
  const scan = (i: number, code: string, more: Record<string, unknown> = {}) => call(on(i), 'POST', '/api/checkin', { code, source: 'camera', ...more }, staff);
  const inside = async (showId: string, i = 0) => {
    const d = (await call(on(i), 'GET', `/api/shows/${showId}/door`, undefined, staff)).body;
    return { show: d.inside, ...Object.fromEntries(d.lists.map((l: any) => [l.id, l.inside])) };
  };
  const tally = (answers: Answer[]) => {
    const out: Record<string, number> = {};
    for (const x of answers) out[x.status === 201 || x.status === 200 ? 'ok' : x.body.error.code] = (out[x.status === 201 || x.status === 200 ? 'ok' : x.body.error.code] ?? 0) + 1;
    return out;
  };

  it.skipIf(!redis.available)('entry, exit and re-entry races: one winner each time, the counters exact on both processes', async () => {
    const { show, tickets } = await showWith(['R-1']);
    const once = (await call(a.url, 'POST', `/api/shows/${show.id}/lists`, { name: '한 번', allow_entry_after_exit: false }, staff)).body;
    const code = tickets[0].code;
    // entry on main, 40 at once split over both processes
    expect(tally(await Promise.all(Array.from({ length: 40 }, (_, i) => scan(i, code))))).toEqual({ ok: 1, already_redeemed: 39 });
    expect(tally(await Promise.all(Array.from({ length: 40 }, (_, i) => scan(i, code, { type: 'exit' }))))).toEqual({ ok: 1, not_inside: 39 });
    // main allows entry after exit: once again, one winner
    expect(tally(await Promise.all(Array.from({ length: 40 }, (_, i) => scan(i, code))))).toEqual({ ok: 1, already_redeemed: 39 });
    expect(await inside(show.id, 0)).toEqual({ show: 1, main: 1, [once.id]: 0 });
    expect(await inside(show.id, 1)).toEqual({ show: 1, main: 1, [once.id]: 0 });
    // the second list: in once, out, never again
    expect(tally(await Promise.all(Array.from({ length: 20 }, (_, i) => scan(i, code, { list_id: once.id }))))).toEqual({ ok: 1, already_redeemed: 19 });
    expect((await scan(1, code, { list_id: once.id, type: 'exit' })).status).toBe(201);
    expect(tally(await Promise.all(Array.from({ length: 20 }, (_, i) => scan(i, code, { list_id: once.id }))))).toEqual({ already_redeemed: 20 });
    expect(await inside(show.id, 1)).toEqual({ show: 1, main: 1, [once.id]: 0 });
  });

  it.skipIf(!redis.available)('undo races across processes: one undo stands; an entry racing an undo leaves counters that match the ticket', async () => {
    const { show, tickets } = await showWith(['U-1', 'U-2']);
    const entered = await scan(0, tickets[0].code);
    const undo = { reservation_id: tickets[0].reservation_id, scan_id: entered.body.checkin.id, reason: '두 곳에서 취소' };
    expect(tally(await Promise.all(Array.from({ length: 30 }, (_, i) => call(on(i), 'POST', `/api/shows/${show.id}/lists/main/revert`, undo, staff))))).toEqual({ ok: 1, already_reverted: 29 });
    expect(await inside(show.id)).toEqual({ show: 0, main: 0 });
    // the second ticket: its entry undone while 20 scans of it race the undo on both processes
    const e2 = await scan(1, tickets[1].code);
    const [undone, ...scans] = await Promise.all([
      call(a.url, 'POST', `/api/shows/${show.id}/lists/main/revert`, { reservation_id: tickets[1].reservation_id, scan_id: e2.body.checkin.id, reason: '경합' }, staff),
      ...Array.from({ length: 20 }, (_, i) => scan(i, tickets[1].code)),
    ]);
    expect(undone!.status).toBe(200);
    const admitted = scans.filter((x) => x.status === 201).length;
    expect(admitted).toBeLessThanOrEqual(1);
    const status = (await call(b.url, 'GET', `/api/mticket/${tickets[1].code}`)).body.status;
    expect(status).toBe(admitted === 1 ? 'checked_in' : 'entry_allowed');
    expect(await inside(show.id)).toEqual({ show: admitted, main: admitted });
    expect((await call(a.url, 'GET', `/api/shows/${show.id}/counts`, undefined, staff)).body.checked_in).toBe(admitted);
  });

  it.skipIf(!redis.available)('offline uploads obey the list: re-entry after an exit is admitted, a second entry while inside is a conflict; one winner between processes', async () => {
    const { show, tickets } = await showWith(['O-1', 'O-2']);
    const upload = (i: number, scans: unknown[]) => call(on(i), 'POST', '/api/checkin/offline', { scans }, staff);
    const at = (min: number) => new Date(Date.now() - min * 60_000).toISOString();
    // O-1 entered and left online; the offline door let it in again: main allows entry after exit
    await scan(0, tickets[0].code);
    await scan(1, tickets[0].code, { type: 'exit' });
    const back = await upload(0, [{ id: `off-${process.pid}-1`, code: tickets[0].code, scanned_at: at(1), source: 'camera' }]);
    expect(back.body.results[0]).toMatchObject({ result: 'ok' });
    // and a second offline admission while inside is a conflict, with the reason the list gives
    const again = await upload(1, [{ id: `off-${process.pid}-2`, code: tickets[0].code, scanned_at: at(1), source: 'camera' }]);
    expect(again.body.results[0]).toMatchObject({ result: 'conflict', conflict: { reason: 'already_redeemed', list_id: 'main' } });
    // two devices' uploads of O-2 on both processes at once: one ok, one conflict
    const [x, y] = await Promise.all([
      upload(0, [{ id: `off-${process.pid}-3`, code: tickets[1].code, scanned_at: at(2), source: 'camera' }]),
      upload(1, [{ id: `off-${process.pid}-4`, code: tickets[1].code, scanned_at: at(2), source: 'camera' }]),
    ]);
    expect([x!.body.results[0].result, y!.body.results[0].result].sort()).toEqual(['conflict', 'ok']);
    expect(await inside(show.id)).toEqual({ show: 2, main: 2 });
  });

  it.skipIf(!redis.available)('offline uploads on a list of their own, split over both processes: one entry stands on that list; its rules name the conflicts', async () => {
    const { show, tickets } = await showWith(['V-1', 'W-1']);
    const vip = (await call(a.url, 'POST', `/api/shows/${show.id}/lists`, { name: 'VIP', seats: [{ from: 'V-1', to: 'V-9' }], allow_entry_after_exit: false }, staff)).body;
    const upload = (i: number, scans: unknown[]) => call(on(i), 'POST', '/api/checkin/offline', { scans }, staff);
    const at = new Date(Date.now() - 60_000).toISOString();
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => upload(i, [{ id: `vip-${process.pid}-${i}`, code: tickets[0].code, scanned_at: at, source: 'camera', list_id: vip.id }])),
    );
    const results = answers.map((x) => x.body.results[0]);
    expect(results.filter((r) => r.result === 'ok')).toHaveLength(1);
    expect(results.filter((r) => r.result === 'conflict' && r.conflict.reason === 'already_redeemed' && r.conflict.list_id === vip.id)).toHaveLength(9);
    // a ticket the list does not admit, uploaded from its door: a conflict, not an entry
    const w = await upload(1, [{ id: `vip-${process.pid}-w`, code: tickets[1].code, scanned_at: at, source: 'camera', list_id: vip.id }]);
    expect(w.body.results[0]).toMatchObject({ result: 'conflict', conflict: { reason: 'product', seat: 'W-1' } });
    expect(await inside(show.id, 1)).toEqual({ show: 1, main: 0, [vip.id]: 1 });
  });
});
